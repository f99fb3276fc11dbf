"""From judgements to one action for the write path: merge, supersede, store or review."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from memory_app.judge.base import Judgement

Action = Literal["merge", "supersede", "store", "review"]

_ACTION_OF = {"duplicate": "merge", "refine": "merge", "update": "supersede"}

# A judge that says "distinct" but with less than even confidence is itself unsure: a human decides.
DISTINCT_SURE = 0.5
# A supersede hides the older fact from search, so it needs this much confidence whatever the
# calibrated merge threshold is (cross-validated: with the merge threshold alone, folds whose
# threshold fell to 0.74 superseded 4 % of distinct pairs; with this floor none).
SUPERSEDE_SURE = 0.9


@dataclass(frozen=True)
class Decision:
    action: Action
    index: int | None = None
    judgement: Judgement | None = None


class DecisionPolicy(Protocol):
    """`decide`'s shape, for callers that take the policy as a parameter (compaction's tools)."""

    def __call__(self, judgements: list[Judgement], *, review_below: float) -> Decision: ...


def acts_on(judgement: Judgement, *, review_below: float) -> bool:
    """Whether decide() may act on this judgement by itself (merge or supersede), not review it."""
    if judgement.relation == "distinct":
        return False
    needed = max(review_below, SUPERSEDE_SURE) if judgement.relation == "update" else review_below
    return judgement.confidence >= needed


def decide(judgements: list[Judgement], *, review_below: float) -> Decision:
    """Act on the most confident actionable judgement; otherwise review the most confident doubt.

    Errors fall toward review, never toward merge: any non-distinct judgement under `review_below`
    can only queue the pair.
    """
    actionable: list[tuple[float, int]] = []
    doubtful: list[tuple[float, int]] = []
    for index, judgement in enumerate(judgements):
        if judgement.relation == "distinct":
            if judgement.confidence < DISTINCT_SURE:
                doubtful.append((1.0 - judgement.confidence, index))
            continue
        if acts_on(judgement, review_below=review_below):
            actionable.append((judgement.confidence, index))
        else:
            doubtful.append((judgement.confidence, index))
    if actionable:
        # Highest confidence wins; on a tie the nearer candidate (lower index) does.
        _, index = max(actionable, key=lambda item: (item[0], -item[1]))
        return Decision(_ACTION_OF[judgements[index].relation], index, judgements[index])  # type: ignore[arg-type]
    if doubtful:
        _, index = max(doubtful, key=lambda item: (item[0], -item[1]))
        return Decision("review", index, judgements[index])
    return Decision("store", None, None)
