"""Load-time deduplication: propose near-duplicate groups by distance, let the relation judge decide.

Distance only proposes: an update ("goal 23" -> "goal 24") sits closer than many true duplicates,
so every proposed member is confirmed by the same judge the write path uses. Only `duplicate` and
`refine` join a group; anything else is shown on its own. Nothing is written: the group's display
text is chosen (the LLM judge's merged text, else the most informative member) and every member id
is returned, so the agent loses nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from memory_app.judge.base import JudgeItem, Judgement, RelationJudge
from memory_app.judge.merge import information
from memory_app.retrieval.clustering import cosine_distances, near_duplicate_groups

MERGING_RELATIONS = frozenset({"duplicate", "refine"})


@dataclass(frozen=True)
class DedupGroup:
    members: list[int]  # indices into the input, best-ranked first
    text: str  # what the agent sees for the group


def dedup_groups(
    texts: Sequence[str],
    embeddings: np.ndarray,
    *,
    threshold: float,
    judge: RelationJudge,
    merge: Callable[[Sequence[str]], str],
    min_confidence: float,
) -> list[DedupGroup]:
    """Groups in rank order of their best member; inputs are in rank order (best first).

    A member joins only on a merging judgement at least `min_confidence` sure: the write path's
    bar for acting without a human (calibration.review_below), so display and storage agree.
    """
    n = len(texts)
    if n == 0:
        return []
    proposals = near_duplicate_groups(cosine_distances(embeddings), threshold=threshold)
    groups: list[DedupGroup] = []
    for proposal in proposals:
        leader, others = proposal[0], proposal[1:]
        if not others:
            groups.append(DedupGroup(members=[leader], text=texts[leader]))
            continue
        kept = [leader]
        merged_text = None
        for index in others:
            judgement = _judge_pair(judge, texts, embeddings, leader, index)
            if judgement.relation in MERGING_RELATIONS and judgement.confidence >= min_confidence:
                kept.append(index)
                merged_text = merged_text or judgement.merged_text
            else:
                groups.append(DedupGroup(members=[index], text=texts[index]))
        text = merged_text or (
            _merged(merge, tuple(texts[i] for i in kept)) if len(kept) > 1 else texts[leader]
        )
        groups.append(DedupGroup(members=kept, text=text))
    groups.sort(key=lambda group: group.members[0])
    return groups


@lru_cache(maxsize=4096)
def _merged(merge: Callable[[Sequence[str]], str], texts: tuple[str, ...]) -> str:
    return merge(texts)


@lru_cache(maxsize=8192)
def _information(text: str) -> int:
    return information(text)


# The same rows come back in search after search, so verdicts are remembered per process: a pair
# of texts at (almost) the same distance gets the same verdict from a deterministic judge.
_VERDICTS: OrderedDict[tuple[str, str, str, float], Judgement] = OrderedDict()
_VERDICTS_MAX = 8192


def clear_verdict_cache() -> None:
    _VERDICTS.clear()
    _information.cache_clear()
    _merged.cache_clear()


def _judge_pair(
    judge: RelationJudge, texts: Sequence[str], embeddings: np.ndarray, a: int, b: int
) -> Judgement:
    """Judge two results with the more informative one as "new": the judge's `refine` is
    directional (new adds detail to old), while two search results have no order in time."""
    old, new = (a, b) if _information(texts[b]) >= _information(texts[a]) else (b, a)
    distance = float(1.0 - np.dot(embeddings[new], embeddings[old]))
    key = (getattr(judge, "name", type(judge).__name__), texts[new], texts[old], round(distance, 3))
    cached = _VERDICTS.get(key)
    if cached is not None:
        _VERDICTS.move_to_end(key)
        return cached
    verdict = judge.judge(
        JudgeItem(text=texts[new], embedding=embeddings[new]),
        [JudgeItem(text=texts[old], embedding=embeddings[old])],
    )[0]
    _VERDICTS[key] = verdict
    if len(_VERDICTS) > _VERDICTS_MAX:
        _VERDICTS.popitem(last=False)
    return verdict
