"""The LLM extractor: one chat call with JSON output; any failure raises LlmUnavailable."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from memory_app.extraction.types import ExtractedMemory
from memory_app.llm_client import LlmUnavailable, chat_json

SYSTEM = """You extract long-term memories from one exchange between a user and an assistant.
Keep only what the USER states explicitly and what stays useful later: preferences, goals, facts
about the user and their life, notable events. Skip questions, requests, small talk, passing moods
and anything only the assistant said. Write each memory in the third person, starting with "User"
(e.g. "User prefers morning workouts"), one fact per memory.
Answer with a JSON object: {"memories": [{"text": str, "kind": "episodic" | "semantic",
"type": "preference" | "goal" | "fact" | "event", "topics": [str], "entities": [str],
"confidence": number between 0 and 1}]}. "semantic" is for impersonal knowledge the user states
(not about themselves). Return {"memories": []} when there is nothing to keep."""

EVENT_TYPES = {"preference", "goal", "fact", "event"}


def _strings(value: Any, limit: int = 20) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(sorted({str(v).strip()[:100] for v in value[:limit] if str(v).strip()}))


def parse_memories(payload: dict[str, Any]) -> list[ExtractedMemory]:
    """Validated memories from the model's JSON; malformed items are dropped, not guessed at."""
    items = payload.get("memories")
    if not isinstance(items, list):
        raise LlmUnavailable("LLM answer has no `memories` list")
    out: list[ExtractedMemory] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        text = item["text"].strip()[: settings.MEMORY_MAX_TEXT_CHARS]
        if not text:
            continue
        kind = item.get("kind") if item.get("kind") in {"episodic", "semantic"} else "episodic"
        event_type = item.get("type") if item.get("type") in EVENT_TYPES else "fact"
        try:
            confidence = min(max(float(item.get("confidence", 0.7)), 0.0), 1.0)
        except (TypeError, ValueError):
            confidence = 0.7
        out.append(
            ExtractedMemory(
                text=text,
                kind=kind,
                event_type=event_type,
                topics=_strings(item.get("topics")),
                entities=_strings(item.get("entities")),
                confidence=confidence,
            )
        )
    return out


def extract_llm(user_message: str, assistant_message: str = "") -> list[ExtractedMemory]:
    user = f"User: {user_message}"
    if assistant_message:
        user += f"\nAssistant: {assistant_message}"
    return parse_memories(chat_json(system=SYSTEM, user=user))
