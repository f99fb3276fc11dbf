"""The LLM extractors (one exchange; new messages of a conversation): one chat call with JSON
output each; any failure raises LlmUnavailable."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from memory_app.conf import store_config
from memory_app.extraction.conversation import ChatMessage, MemoryDraft, with_speaker
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
        text = item["text"].strip()[: store_config().max_text_chars]
        if not text:
            continue
        kind = item["kind"] if item.get("kind") in {"episodic", "semantic"} else "episodic"
        event_type = item["type"] if item.get("type") in EVENT_TYPES else "fact"
        confidence = _confidence(item.get("confidence"))
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


CONVERSATION_SYSTEM = """You extract long-term memories from new messages of a conversation.
Each message is shown as [id] (date) Speaker: text. Earlier messages, marked "context", are there
only to understand the new ones. Keep what a speaker states explicitly and what stays useful later:
facts about the speakers and their lives, preferences, goals, plans, notable events. Skip questions,
small talk and passing moods. Write each memory in the third person naming the person it is about
("Melanie's daughter Mia turned 7"), one fact per memory. Resolve relative dates ("yesterday",
"last Saturday", "next month") against the date of the message that says them.
Answer with a JSON object: {"memories": [{"text": str, "about": the speaker the fact is about,
"type": "preference" | "goal" | "fact" | "event", "event_date": "YYYY-MM-DD" or null,
"source_message_ids": [ids of the messages it comes from], "topics": [str], "entities": [str],
"confidence": number between 0 and 1}]}. Return {"memories": []} when there is nothing to keep."""


def _transcript(messages: Sequence[ChatMessage], first: int) -> str:
    lines = []
    for index, m in enumerate(messages):
        mark = "" if index >= first else " context"
        date = f" ({m.timestamp.date().isoformat()})" if m.timestamp else ""
        lines.append(f"[{m.message_id}{mark}]{date} {m.name}: {m.content}")
    return "\n".join(lines)


def _event_date(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = date.fromisoformat(value.strip()[:10])
    except ValueError:
        return None
    return datetime(parsed.year, parsed.month, parsed.day, tzinfo=UTC)


def parse_conversation_memories(
    payload: dict[str, Any], messages: Sequence[ChatMessage], first: int
) -> list[MemoryDraft]:
    """Validated drafts from the model's JSON. A memory about someone who is not a speaker of the
    messages, or with no source among the new messages, is dropped: attribution is not guessed."""
    items = payload.get("memories")
    if not isinstance(items, list):
        raise LlmUnavailable("LLM answer has no `memories` list")
    new = {m.message_id: m for m in messages[first:]}
    speakers = {m.name for m in messages}
    out: list[MemoryDraft] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        text = item["text"].strip()[: store_config().max_text_chars]
        about = item.get("about")
        sources = item.get("source_message_ids")
        ids = tuple(str(s) for s in sources if str(s) in new) if isinstance(sources, list) else ()
        if not text or about not in speakers or not ids:
            continue
        source = new[ids[0]]
        confidence = _confidence(item.get("confidence"))
        out.append(
            MemoryDraft(
                text=text,
                about=about,
                said_by=source.name,
                event_type=item["type"] if item.get("type") in EVENT_TYPES else "fact",
                extracted_by="llm",
                source_message_ids=ids,
                event_date=_event_date(item.get("event_date")) or source.timestamp,
                said_at=source.timestamp,
                entities=with_speaker(about, _strings(item.get("entities"))),
                topics=_strings(item.get("topics")),
                confidence=confidence,
            )
        )
    return out


def extract_llm_conversation(messages: Sequence[ChatMessage], first: int = 0) -> list[MemoryDraft]:
    """One chat call for the new messages messages[first:] (the earlier ones are context)."""
    payload = chat_json(system=CONVERSATION_SYSTEM, user=_transcript(messages, first))
    return parse_conversation_memories(payload, messages, first)


def _confidence(value: object, default: float = 0.7) -> float:
    """The model's confidence clamped to 0..1; anything that is not a number gets the default."""
    if value is None:
        return default
    try:
        return min(max(float(value), 0.0), 1.0)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
