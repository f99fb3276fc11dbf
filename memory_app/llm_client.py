"""A thin OpenAI-compatible chat client for extraction and session summaries.

Callers treat every failure (no LLM configured, network, bad JSON) as "no LLM" and fall back to
their offline path; this module only raises `LlmUnavailable`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from memory_app.conf import llm_config

logger = logging.getLogger(__name__)


class LlmUnavailable(Exception):
    """The LLM is not configured or its answer could not be used."""


def llm_configured() -> bool:
    return llm_config().configured


def _client() -> Any:
    # start-up cost: openai is imported only when an LLM is configured
    from openai import OpenAI

    config = llm_config()
    return OpenAI(
        api_key=config.api_key,
        base_url=config.base_url or None,
        timeout=config.timeout_seconds,
        max_retries=1,
    )


def chat(*, system: str, user: str, json_output: bool = False, max_tokens: int | None = None) -> str:
    if not llm_configured():
        raise LlmUnavailable("no LLM configured (LLM_MODEL and OPENAI_API_KEY)")
    kwargs: dict[str, Any] = {
        "model": llm_config().model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "temperature": 0,
    }
    if json_output:
        kwargs["response_format"] = {"type": "json_object"}
    if max_tokens:
        kwargs["max_tokens"] = max_tokens
    try:
        response = _client().chat.completions.create(**kwargs)
        content = response.choices[0].message.content or ""
    except Exception as exc:  # any transport or API error degrades to the offline path
        raise LlmUnavailable(f"LLM call failed: {exc}") from exc
    return content


def chat_json(*, system: str, user: str, max_tokens: int | None = None) -> dict[str, Any]:
    content = chat(system=system, user=user, json_output=True, max_tokens=max_tokens)
    try:
        value = json.loads(content)
    except ValueError as exc:
        raise LlmUnavailable(f"LLM answer is not JSON: {content[:200]!r}") from exc
    if not isinstance(value, dict):
        raise LlmUnavailable("LLM answer is not a JSON object")
    return value
