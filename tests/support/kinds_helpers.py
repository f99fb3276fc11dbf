"""Helpers shared by the kinds tests (sessions, procedures, coordinator): the LLM stubbed at HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx

CHAT_URL = "https://api.openai.com/v1/chat/completions"


def chat_response(content: str | dict[str, Any]) -> httpx.Response:
    text = content if isinstance(content, str) else json.dumps(content)
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        },
    )


def use_llm(settings: Any) -> None:
    settings.LLM_MODEL = "gpt-test"
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_BASE_URL = ""
