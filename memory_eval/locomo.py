"""LoCoMo recall: load conversations as episodic memories, ask the questions, score recall@k.

A turn becomes one memory: its text is "Speaker: words" (plus the image caption for photo turns,
since the words alone often just say "look at this"); its `context` holds the neighbouring turns of
the same session (weight B in the tsvector), because answers are often spread over a question
and its reply; its event date is the session date. Questions of category 5 (adversarial, no answer
in the conversation) are left out; evidence ids are read with a pattern since a few are malformed.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_app.text import normalized_hash

SESSION_KEY = re.compile(r"session_(\d+)")
EVIDENCE = re.compile(r"D\d+:\d+")
KS = (1, 5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass(frozen=True)
class Turn:
    conversation: int
    session: int
    position: int
    dia_id: str
    speaker: str
    text: str
    caption: str
    date: datetime | None


@dataclass(frozen=True)
class Question:
    conversation: int
    question: str
    category: int
    evidence: frozenset[str]
    answer: str = ""


def parse_date(value: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' -> an aware datetime; None when the format is unexpected."""
    try:
        return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def load_locomo(path: Path) -> tuple[list[Turn], list[Question]]:
    data = json.loads(Path(path).read_text())
    turns: list[Turn] = []
    questions: list[Question] = []
    for index, sample in enumerate(data):
        conversation = sample["conversation"]
        sessions = sorted(
            int(match.group(1))
            for key, value in conversation.items()
            if (match := SESSION_KEY.fullmatch(key)) and isinstance(value, list)
        )
        for session in sessions:
            date = parse_date(str(conversation.get(f"session_{session}_date_time", "")))
            for position, turn in enumerate(conversation[f"session_{session}"]):
                turns.append(
                    Turn(
                        conversation=index,
                        session=session,
                        position=position,
                        dia_id=str(turn.get("dia_id", "")),
                        speaker=str(turn.get("speaker", "")),
                        text=str(turn.get("text", "")),
                        caption=str(turn.get("blip_caption", "") or ""),
                        date=date,
                    )
                )
        for qa in sample.get("qa", []):
            category = int(qa.get("category", 0))
            if category not in CATEGORIES:
                continue
            evidence = frozenset(EVIDENCE.findall(" ".join(map(str, qa.get("evidence", [])))))
            if evidence:
                answer = str(qa.get("answer", "") or "")
                questions.append(Question(index, str(qa["question"]), category, evidence, answer))
    return turns, questions


def turn_text(turn: Turn, *, speaker: bool = True) -> str:
    body = turn.text + (f" [shares a photo: {turn.caption}]" if turn.caption else "")
    return f"{turn.speaker}: {body}" if speaker else body


def turn_context(turns: list[Turn], index: int, *, radius: int, speaker: bool = True) -> str:
    """The neighbouring turns of the same session, `radius` each side, one per line."""
    here = turns[index]
    lines = []
    for other in range(max(0, index - radius), min(len(turns), index + radius + 1)):
        t = turns[other]
        if other != index and t.conversation == here.conversation and t.session == here.session:
            lines.append(turn_text(t, speaker=speaker))
    return "\n".join(lines)


def conversation_range(spec: str) -> set[int] | None:
    """`--conversations`: "N" the first N (0: all, None), "A-B" conversations A to B inclusive."""
    low, dash, high = str(spec).partition("-")
    if dash:
        return set(range(int(low), int(high) + 1))
    return set(range(int(low))) if int(low) else None


def load_conversations(path: Path, spec: str) -> tuple[list[Turn], list[Question]]:
    """The turns and questions of the conversations `spec` names (`conversation_range`)."""
    turns, questions = load_locomo(path)
    keep = conversation_range(spec)
    if keep is None:
        return turns, questions
    return [t for t in turns if t.conversation in keep], [q for q in questions if q.conversation in keep]


def asked_at(turns: list[Turn]) -> dict[int, datetime]:
    """When each conversation's questions are asked: its last session's date (they are asked
    after the conversation), the `now` that a question's "last week" or "in May" is read against."""
    latest: dict[int, datetime] = {}
    for turn in turns:
        if turn.date is not None and (
            turn.conversation not in latest or turn.date > latest[turn.conversation]
        ):
            latest[turn.conversation] = turn.date
    return latest


def user_of(conversation: int) -> str:
    return f"locomo-{conversation}"


def memory_items(
    turns: list[Turn], *, context_radius: int, speaker: bool, embed: Callable[[list[str]], Any]
) -> list[dict[str, Any]]:
    """`memory_build` fields for every distinct turn of a conversation (embedded in one batch).

    A conversation repeats some turns word for word ("Caroline: Thanks!"); the store keeps one
    active memory per normalised text in a scope, so a repeat adds its dia id to the first copy.
    """
    texts = [turn_text(t, speaker=speaker) for t in turns]
    first: dict[tuple[int, str], dict[str, Any]] = {}
    items: list[dict[str, Any]] = []
    for index, turn in enumerate(turns):
        key = (turn.conversation, normalized_hash(texts[index]))
        if key in first:
            first[key]["metadata"]["dia_ids"].append(turn.dia_id)
            continue
        item = {
            "text": texts[index],
            "kind": "episodic",
            "user_id": user_of(turn.conversation),
            "session_id": f"session-{turn.session}",
            "event_type": "conversation_turn",
            "event_date": turn.date,
            "context": turn_context(turns, index, radius=context_radius, speaker=speaker)
            if context_radius
            else "",
            "metadata": {"dia_id": turn.dia_id, "dia_ids": [turn.dia_id]},
        }
        first[key] = item
        items.append(item)
    vectors = embed([item["text"] for item in items])
    for item, vector in zip(items, vectors, strict=True):
        item["embedding"] = vector
    return items


@dataclass
class RecallTally:
    questions: int = 0
    hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))
    by_category: dict[int, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0, 0, 0]))

    def add(self, category: int, ranked_ids: list[set[str]], evidence: frozenset[str]) -> None:
        """`ranked_ids`: per returned entry, the dia ids it stands for (several when deduplicated)."""
        self.questions += 1
        row = self.by_category[category]
        row[0] += 1
        for slot, k in enumerate(KS, start=1):
            if any(ids & evidence for ids in ranked_ids[:k]):
                self.hits[k] += 1
                row[slot] += 1

    def summary(self) -> dict[str, Any]:
        n = max(self.questions, 1)
        result: dict[str, Any] = {"questions": self.questions}
        result.update({f"recall_at_{k}": round(self.hits[k] / n, 4) for k in KS})
        result["per_category"] = {
            CATEGORIES[c]: {
                "questions": row[0],
                **{f"recall_at_{k}": round(row[i + 1] / row[0], 4) for i, k in enumerate(KS)},
            }
            for c, row in sorted(self.by_category.items())
        }
        return result
