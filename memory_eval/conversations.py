"""LoCoMo through the front door: conversations replayed through `interaction_store` (the service
behind POST /interactions), questions asked through `context_all` (behind POST /context/all) at
several token budgets.

Evidence recall within a budget: the share of questions whose returned context holds a memory made
from one of the evidence messages (each memory records its source message ids; a memory merged or
superseded later hands them on along its lineage, and a search group counts all its members).
Answer containment: the gold answer appears word for word (case-folded) in the formatted context.
"""

from __future__ import annotations

import re
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from memory_app.extraction import ChatMessage
from memory_app.models import Memory, Tenant
from memory_app.selectors.context.turn import ContextRequest, context_all
from memory_app.services.kinds.interactions import InteractionInput, interaction_store
from memory_eval.locomo import CATEGORIES, Question, Turn, turn_text, user_of

# Used only to measure date resolution: does an evidence message hold a relative date expression?
# (The service itself resolves dates with dateparser; this independent pattern keeps the measure
# from grading dateparser with its own notion of a date.)
RELATIVE_DATE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last\s+(?:night|week|weekend|month|year|\w+day)|"
    r"next\s+(?:week|weekend|month|year|\w+day)|this\s+(?:morning|week|weekend|month|year|past\s+\w+)|"
    r"(?:a|one|two|three|four|five|six|few|couple\s+of)\s+(?:days?|weeks?|months?|years?)\s+ago|"
    r"(?:the\s+)?(?:other|previous)\s+day|recently|lately|"
    r"(?:a\s+)?(?:week|month|year)\s+ago|(?:this|last)\s+(?:summer|winter|spring|fall|autumn))\b",
    re.I,
)


# Relative, but naming no day or calendar period: "recently", "lately", "the other day", and a count
# that is not a number ("a few weeks ago", "a couple of days ago"). A miss of one of them is reported
# apart from the dated misses. Ingestion reads the approximate ones and "the other day" as about that
# long ago (extraction/dates.py), so mostly "recently" and "lately" remain. Seasons ("last summer")
# name a period and count as dated.
VAGUE = re.compile(
    r"^(?:recently|lately|(?:the\s+)?other\s+day|"
    r"(?:a\s+)?(?:few|couple\s+of)\s+(?:days?|weeks?|months?|years?)\s+ago)$",
    re.I,
)


def session_messages(turns: list[Turn]) -> list[ChatMessage]:
    """A session's turns as chat messages: every speaker is a person (role user) with a name; the
    session's date plus one minute per turn keeps them in order."""
    return [
        ChatMessage(
            role="user",
            content=turn_text(t, speaker=False),
            speaker=t.speaker,
            timestamp=t.date + timedelta(minutes=t.position) if t.date else None,
            message_id=t.dia_id,
        )
        for t in turns
    ]


@dataclass
class Ingested:
    messages: int = 0
    seconds: float = 0.0
    outcomes: Counter[str] = field(default_factory=Counter)
    sources: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))  # row -> message ids
    warnings: list[str] = field(default_factory=list)


def replay(
    tenant: Tenant,
    turns: list[Turn],
    *,
    extraction: str,
    per_call: int = 0,
    progress: Callable[[int], None] = lambda n: None,
) -> Ingested:
    """Store every session of the conversations in order, `per_call` messages per interaction
    (0: a whole session per call, as an import of a history)."""
    sessions: dict[tuple[int, int], list[Turn]] = defaultdict(list)
    for turn in turns:
        sessions[(turn.conversation, turn.session)].append(turn)
    done = Ingested()
    for (conversation, session), session_turns in sorted(sessions.items()):
        messages = session_messages(session_turns)
        size = per_call or len(messages)
        for start in range(0, len(messages), size):
            chunk = messages[start : start + size]
            began = time.perf_counter()
            result = interaction_store(
                tenant=tenant,
                data=InteractionInput(
                    session_id=f"locomo-{conversation}-session-{session}",
                    user_id=user_of(conversation),
                    messages=tuple(chunk),
                    extraction=extraction,
                ),
            )
            done.seconds += time.perf_counter() - began
            done.messages += len(chunk)
            done.warnings.extend(result.warnings)
            for memory in result.memories:
                done.outcomes[memory["outcome"]] += 1
                done.sources[memory["memory_id"]].update(memory["source_message_ids"])
            progress(len(chunk))
    return done


def lineage_sources(tenant: Tenant, sources: dict[int, set[str]]) -> dict[int, set[str]]:
    """Message ids per row, handed on from each row to the rows that replaced it."""
    successor = dict(Memory.objects.filter(tenant=tenant).values_list("id", "superseded_by_id"))
    out: dict[int, set[str]] = defaultdict(set)
    for first, ids in sources.items():
        row: int | None = first
        seen = set()
        while row is not None and row not in seen:
            seen.add(row)
            out[row] |= ids
            row = successor.get(row)
    return out


@dataclass
class BudgetTally:
    questions: int = 0
    evidence: int = 0
    answers: int = 0
    tokens: list[int] = field(default_factory=list)
    by_category: dict[int, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0]))

    def summary(self) -> dict[str, Any]:
        n = max(self.questions, 1)
        return {
            "questions": self.questions,
            "evidence_recall": round(self.evidence / n, 4),
            "answer_containment": round(self.answers / n, 4),
            "mean_tokens": round(statistics.fmean(self.tokens), 1) if self.tokens else 0,
            "max_tokens_returned": max(self.tokens, default=0),
            "per_category": {
                CATEGORIES[c]: {
                    "questions": row[0],
                    "evidence_recall": round(row[1] / row[0], 4),
                    "answer_containment": round(row[2] / row[0], 4),
                }
                for c, row in sorted(self.by_category.items())
            },
        }


def ask(
    tenant: Tenant,
    questions: Iterable[Question],
    budgets: list[int],
    sources: dict[int, set[str]],
    progress: Callable[[int], None] = lambda n: None,
) -> tuple[dict[int, BudgetTally], list[float]]:
    tallies = {b: BudgetTally() for b in budgets}
    latencies: list[float] = []
    for question in questions:
        for budget in budgets:
            began = time.perf_counter()
            result = context_all(
                tenant=tenant,
                request=ContextRequest(
                    query=question.question, user_id=user_of(question.conversation), max_tokens=budget
                ),
            )
            latencies.append((time.perf_counter() - began) * 1000)
            rows = (result.episodic or {}).get("memories", [])
            found = set().union(
                *(sources.get(i, set()) for row in rows for i in [row["id"], *row.get("member_ids", [])])
            )
            hit = bool(found & question.evidence)
            answer = question.answer.strip().casefold()
            contained = bool(answer) and answer in result.formatted.casefold()
            tally = tallies[budget]
            tally.questions += 1
            tally.evidence += hit
            tally.answers += contained
            tally.tokens.append(result.tokens.get("total", 0))
            row = tally.by_category[question.category]
            row[0] += 1
            row[1] += hit
            row[2] += contained
        progress(1)
    return tallies, latencies


def date_resolution(tenant: Tenant, turns: list[Turn], questions: list[Question]) -> dict[str, Any]:
    """Of the evidence messages that hold a relative date expression, how many got an event date
    read from the text (not just the message's own time); the misses are listed.

    Dia ids repeat across conversations ("D1:3" is in every one), so a message is known by its
    conversation and dia id, and a memory's conversation by its user."""
    evidence = {(q.conversation, dia) for q in questions for dia in q.evidence}
    relative = {
        (t.conversation, t.dia_id): t
        for t in turns
        if (t.conversation, t.dia_id) in evidence and RELATIVE_DATE.search(t.text)
    }
    conversation_of = {user_of(c): c for c in {t.conversation for t in turns}}
    resolved: dict[tuple[int, str], str] = {}
    rows = Memory.objects.filter(
        tenant=tenant, metadata__extracted_by="message", user_id__in=list(conversation_of)
    ).values_list("user_id", "metadata__source_message_ids", "metadata__date_expression")
    for user_id, ids, expression in rows:
        for dia in ids or []:
            key = (conversation_of[user_id], dia)
            if key in relative and expression:
                resolved[key] = expression
    misses: list[dict[str, Any]] = []
    for key, turn in sorted(relative.items()):
        if key not in resolved:
            match = RELATIVE_DATE.search(turn.text)
            misses.append(
                {
                    "conversation": key[0],
                    "dia_id": key[1],
                    "text": turn.text,
                    "expression": match.group(0) if match else "",
                }
            )
    vague = [m for m in misses if VAGUE.match(str(m["expression"]))]
    dated = len(relative) - len(vague)
    return {
        "evidence_messages_with_relative_date": len(relative),
        "resolved": len(resolved),
        "share_resolved": round(len(resolved) / max(len(relative), 1), 4),
        "vague_only": len(vague),  # "recently", "the other day", "a few weeks ago": no day named
        "share_resolved_of_dated": round(len(resolved) / max(dated, 1), 4),
        "resolved_expressions": {f"{c}/{dia}": e for (c, dia), e in sorted(resolved.items())},
        "misses": misses,
    }


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else 0.0
