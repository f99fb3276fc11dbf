"""How much of what was trimmed from a session its summary keeps, on LoCoMo.

Each LoCoMo session is replayed turn by turn into a short-term session of its own with a context
window of `window` tokens (session_append, the real service), so its older turns are trimmed and
folded into the summary. An evidence turn of a question (LoCoMo's `evidence` ids) that was trimmed
counts when the summary holds its key facts: the answer's content words that the turn itself
states (a temporal answer such as "7 May 2023" is the session's date, not in the turn, and such
turns are counted apart as `not_stated`). `kept` needs every key word in the summary; `word_share`
is the mean share of key words found.
"""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from memory_app.embeddings.tokens import count_tokens
from memory_app.models import ConversationSession, Tenant
from memory_app.services.kinds.sessions import MessageInput, session_append
from memory_eval.locomo import Question, Turn, turn_text

_WORD = re.compile(r"[a-z0-9]+")


def key_words(answer: str, turn: str) -> set[str]:
    """The answer's content words that the turn states."""
    stated = set(_WORD.findall(turn.lower()))
    return {w for w in _WORD.findall(answer.lower()) if w not in ENGLISH_STOP_WORDS and w in stated}


@dataclass
class SummaryTally:
    sessions: int = 0
    turns: int = 0
    trimmed_turns: int = 0
    summary_tokens: list[int] = field(default_factory=list)
    evidence_trimmed: int = 0
    not_stated: int = 0
    kept: int = 0
    word_shares: list[float] = field(default_factory=list)
    by_category: dict[int, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))

    def add(self, *, category: int, words: set[str], summary: str) -> None:
        self.evidence_trimmed += 1
        if not words:
            self.not_stated += 1
            return
        found = set(_WORD.findall(summary.lower()))
        share = len(words & found) / len(words)
        self.word_shares.append(share)
        self.by_category[category][0] += 1
        if share == 1.0:
            self.kept += 1
            self.by_category[category][1] += 1

    def summary(self) -> dict[str, Any]:
        scored = len(self.word_shares)
        return {
            "sessions": self.sessions,
            "turns": self.turns,
            "trimmed_turns": self.trimmed_turns,
            "mean_summary_tokens": round(sum(self.summary_tokens) / max(len(self.summary_tokens), 1), 1),
            "evidence_turns_trimmed": self.evidence_trimmed,
            "evidence_not_stated_in_turn": self.not_stated,
            "evidence_scored": scored,
            "key_facts_kept_share": round(self.kept / max(scored, 1), 4),
            "key_word_share": round(sum(self.word_shares) / max(scored, 1), 4),
            "per_category": {
                str(c): {"scored": n, "kept_share": round(k / max(n, 1), 4)}
                for c, (n, k) in sorted(self.by_category.items())
            },
        }


def replay_sessions(
    *, tenant: Tenant, turns: list[Turn], questions: list[Question], window: int
) -> dict[str, Any]:
    """Replay every LoCoMo session into its own short-term session and score its summary."""
    evidence: dict[str, list[Question]] = defaultdict(list)
    for question in questions:
        for dia_id in question.evidence:
            evidence[dia_id].append(question)
    sessions: dict[tuple[int, int], list[Turn]] = defaultdict(list)
    for turn in turns:
        sessions[(turn.conversation, turn.session)].append(turn)
    tally = SummaryTally()
    run = uuid.uuid4().hex[:8]
    for (conversation, number), said in sorted(sessions.items()):
        session_id = f"locomo-{run}-{conversation}-{number}"
        positions: dict[int, Turn] = {}
        for turn in said:
            appended = session_append(
                tenant=tenant,
                session_id=session_id,
                messages=[MessageInput("user", turn_text(turn, speaker=False), speaker=turn.speaker)],
                context_window_tokens=window,
            )
            positions[appended.appended[0].position] = turn
        session = ConversationSession.objects.get(tenant=tenant, session_id=session_id)
        first_kept = min(session.messages.values_list("position", flat=True), default=len(positions))
        tally.sessions += 1
        tally.turns += len(said)
        tally.summary_tokens.append(count_tokens(session.summary))
        for position, turn in positions.items():
            if position >= first_kept:
                continue
            tally.trimmed_turns += 1
            for question in evidence.get(turn.dia_id, []):
                words = key_words(question.answer, turn_text(turn, speaker=False))
                tally.add(category=question.category, words=words, summary=session.summary)
    return tally.summary()
