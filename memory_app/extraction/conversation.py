"""Offline ingestion of a conversation: what each message becomes in long-term memory, without an LLM.

Every substantive message of a human speaker (role `user`; several speakers in a multi-party chat)
is kept as said: "Speaker: words", its neighbouring messages as `context` (the layout that
`evaluate_retrieval` measures best, see memory_eval/locomo.py), its date resolved from the message
time. The rule extractor then adds the statements it is sure of, about the right person: first
person ("I love hiking") is about the speaker, second person ("Your kids are adorable") about the
person addressed. An assistant's or tool's words only serve as context: they are not evidence about
anyone. Small talk ("Thanks!") and questions that carry no fact ("What should I cook tonight?") are left
out (extraction/smalltalk.py): they stay in the session's short-term memory. A question that
presupposes something ("How was your trip to Paris last week?") is kept.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from memory_app.extraction.dates import resolve_event_date
from memory_app.extraction.rules import _clauses, extract_statement, not_calendar, topics_of
from memory_app.extraction.smalltalk import states_nothing

CONTEXT_RADIUS = 2
HUMAN_ROLES = frozenset({"user"})
ROLE_NAMES = frozenset({"User", "Assistant", "System", "Tool"})  # names of speakers without a name
_SECOND_PERSON = [
    (re.compile(r"^you(?:'re|\s+are)\b", re.I), "I'm"),
    (re.compile(r"^you(?:'ve|\s+have)\b", re.I), "I've"),
    (re.compile(r"^your\b", re.I), "My"),
]


@dataclass(frozen=True)
class ChatMessage:
    role: str
    content: str
    speaker: str = ""
    timestamp: datetime | None = None
    message_id: str = ""

    @property
    def name(self) -> str:
        """Who said it, as memories name them: the speaker, else the role ("User")."""
        return self.speaker or self.role.capitalize()

    def line(self) -> str:
        return f"{self.name}: {self.content}"


@dataclass(frozen=True)
class MemoryDraft:
    """A long-term memory to store, before the write path: who it is about decides its user."""

    text: str
    about: str  # the speaker name the memory is about
    said_by: str
    event_type: str
    extracted_by: str  # message | rules | llm
    source_message_ids: tuple[str, ...]
    event_date: datetime | None = None
    date_expression: str = ""
    said_at: datetime | None = None
    context: str = ""
    entities: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    confidence: float = 0.6
    kind: str = "episodic"
    metadata: dict[str, object] = field(default_factory=dict)


_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\n)\W*$")


def names_in(text: str) -> tuple[str, ...]:
    """Capitalised words that do not open a sentence ("Mia", "Paris"): a cheap stand-in for NER."""
    found = set()
    for m in re.finditer(r"\b[A-Z][a-zA-Z'-]+\b", text):
        word = m.group(0)
        if not _SENTENCE_START.search(text[: m.start()]) and word.lower() not in ENGLISH_STOP_WORDS:
            found.add(word.removesuffix("'s"))
    return tuple(sorted(not_calendar(found - {"I'm", "I've", "I'd", "I'll"})))


def with_speaker(name: str, entities: tuple[str, ...] | set[str]) -> tuple[str, ...]:
    """The entities plus the speaker's name (a role standing in for a name is no entity), without
    weekday and month names (an LLM's list may hold them too)."""
    return tuple(sorted(not_calendar({*entities, name} - ROLE_NAMES)))


def addressee(messages: Sequence[ChatMessage], index: int) -> str:
    """The other human speaker nearest before (else after) message `index`; "" when there is none."""
    here = messages[index]
    order = [*range(index - 1, -1, -1), *range(index + 1, len(messages))]
    for other in order:
        m = messages[other]
        if m.role in HUMAN_ROLES and m.speaker and m.speaker != here.speaker:
            return m.speaker
    return ""


def neighbour_context(messages: Sequence[ChatMessage], index: int, radius: int = CONTEXT_RADIUS) -> str:
    lines = [
        messages[i].line()
        for i in range(max(0, index - radius), min(len(messages), index + radius + 1))
        if i != index
    ]
    return "\n".join(lines)


def context_without(context: str, *, lines: Collection[str], names: Collection[str]) -> str:
    """`context` (neighbour_context's layout: one "Name: words" line per message) without the given
    message lines and without any line said under one of `names` (the first line of a message whose
    exact text is no longer known, e.g. trimmed from its session)."""
    kept = context
    for line in sorted({line for line in lines if line}, key=len, reverse=True):
        kept = re.sub(rf"(?:^|\n){re.escape(line)}(?=\n|$)", "", kept)
    prefixes = tuple(f"{name}: " for name in names if name)
    parts = [part for part in kept.split("\n") if not (prefixes and part.startswith(prefixes))]
    return "\n".join(parts).strip("\n")


def _second_to_first(clause: str) -> str | None:
    for pattern, first in _SECOND_PERSON:
        if pattern.match(clause):
            return pattern.sub(first, clause, count=1)
    return None


def _about(text: str, name: str) -> str:
    """The rule extractor writes "User ..."; the memory names the person it is about."""
    return name + text[4:] if text.startswith("User") else text


def rule_facts(messages: Sequence[ChatMessage], index: int) -> list[MemoryDraft]:
    """The statements the rule extractor is sure of in message `index`, each about the right person."""
    message = messages[index]
    other = addressee(messages, index)
    found: list[MemoryDraft] = []
    seen: set[str] = set()
    for clause in _clauses(message.content):
        about, memory = message.name, extract_statement(clause)
        if memory is None and other:
            swapped = _second_to_first(clause.strip())
            if swapped is not None:
                about, memory = other, extract_statement(swapped)
        if memory is None:
            continue
        text = _about(memory.text, about)
        if text.lower() in seen:
            continue
        seen.add(text.lower())
        date = resolve_event_date(clause, message.timestamp)
        found.append(
            MemoryDraft(
                text=text,
                about=about,
                said_by=message.name,
                event_type=memory.event_type,
                extracted_by="rules",
                source_message_ids=(message.message_id,),
                event_date=date.when if date else None,
                date_expression=date.expression if date else "",
                said_at=message.timestamp,
                entities=with_speaker(about, memory.entities),
                topics=memory.topics,
                confidence=memory.confidence,
            )
        )
    return found


def message_memory(messages: Sequence[ChatMessage], index: int, *, max_chars: int) -> MemoryDraft | None:
    """Message `index` kept as said, or None for empty questions, small talk and non-human roles."""
    message = messages[index]
    if message.role not in HUMAN_ROLES or not message.content.strip() or states_nothing(message.content):
        return None
    date = resolve_event_date(message.content, message.timestamp)
    return MemoryDraft(
        text=message.line()[:max_chars],
        about=message.name,
        said_by=message.name,
        event_type="message",
        extracted_by="message",
        source_message_ids=(message.message_id,),
        event_date=date.when if date else None,
        date_expression=date.expression if date else "",
        said_at=message.timestamp,
        context=neighbour_context(messages, index),
        entities=with_speaker(message.name, names_in(message.content)),
        topics=topics_of(message.content),
        confidence=0.6,
    )


def drafts_offline(
    messages: Sequence[ChatMessage], *, first: int = 0, max_chars: int = 8000
) -> list[MemoryDraft]:
    """Drafts for messages[first:]; the earlier messages (already stored) serve as context only."""
    drafts: list[MemoryDraft] = []
    for index in range(first, len(messages)):
        kept = message_memory(messages, index, max_chars=max_chars)
        if kept is None:
            continue
        drafts.append(kept)
        drafts.extend(rule_facts(messages, index))
    return drafts
