"""The interface every judge implements (offline features model, LLM)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

Relation = Literal["duplicate", "update", "distinct", "refine"]
RELATIONS: tuple[Relation, ...] = ("duplicate", "update", "distinct", "refine")


@dataclass(frozen=True)
class JudgeItem:
    text: str
    embedding: np.ndarray | None = None
    created_at: datetime | None = None
    memory_id: int | None = None
    # Cosine distance to the new item when the caller already has it (the store's candidate query
    # computes it in the database); otherwise a judge computes it from the two embeddings.
    distance: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Judgement:
    """How `new` relates to one candidate. `merged_text` only when the judge wrote one (LLM)."""

    relation: Relation
    confidence: float
    merged_text: str | None = None
    judge: str = "offline"
    reason: str = ""
    # Why another judge than the one asked for gave this verdict ("" when it was the one asked).
    fallback: str = ""


class RelationJudge(Protocol):
    name: str

    def judge(self, new: JudgeItem, candidates: list[JudgeItem]) -> list[Judgement]:
        """One judgement per candidate, in the candidates' order."""
        ...


@runtime_checkable
class BatchJudge(RelationJudge, Protocol):
    """A judge that judges many unrelated (new, old) pairs in one pass, each as `judge(new, [old])`
    would (the offline judge reads each pair's words once and runs the token model once for all
    pairs that need it; load-time collapse uses it)."""

    def judge_pairs(self, pairs: Sequence[tuple[JudgeItem, JudgeItem]]) -> list[Judgement]: ...


@runtime_checkable
class DecidingJudge(RelationJudge, Protocol):
    """A judge that can leave out work the decision does not need: its judgements give
    `policy.decide` the decision that `judge()`'s would (the offline judge skips the token model
    when a verdict read from the words alone decides; the store path uses it)."""

    def judge_for_decision(
        self, new: JudgeItem, candidates: list[JudgeItem], *, review_below: float
    ) -> list[Judgement]: ...
