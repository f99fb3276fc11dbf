"""Load-time deduplication: propose near-duplicate groups by distance, let the relation judge decide.

Distance only proposes: an update ("goal 23" -> "goal 24") sits closer than many true duplicates,
so every proposed member is confirmed by the same judge the write path uses, under the same rule
(`judge.merge.stands_for`): a member joins only if the text shown can stand for it. The text shown
is always the best-ranked member's own (the one the query matched best), so a member joins only
when that text states what the member states: a duplicate, or a member that the shown text refines,
with no number or name of the member missing. Anything else is shown on its own. Nothing is written
and every member id is returned, so the agent loses nothing.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from memory_app.judge.base import BatchJudge, JudgeItem, Judgement, RelationJudge
from memory_app.judge.merge import information, loses_facts, stands_for
from memory_app.retrieval.clustering import cosine_distances, near_duplicate_groups

MERGING_RELATIONS = frozenset({"duplicate", "refine"})


@dataclass(frozen=True)
class DedupGroup:
    members: list[int]  # indices into the input, best-ranked first
    text: str  # what the agent sees for the group: its best-ranked member's text


def dedup_groups(
    texts: Sequence[str],
    embeddings: np.ndarray,
    *,
    threshold: float,
    judge: RelationJudge,
    min_confidence: float,
    shown: int | None = None,
) -> list[DedupGroup]:
    """Groups in rank order of their best member; inputs are in rank order (best first).

    A member joins only on a merging judgement at least `min_confidence` sure: the write path's
    bar for acting without a human (calibration.review_below), so display and storage agree.

    `shown`: only the first `shown` groups will be used (a caller that takes groups in this order,
    without reordering them). Proposals whose leader cannot be among them are not judged; their rows
    come back as groups of one, after the first `shown` groups, which are exactly what an unbounded
    call gives (members included).
    """
    n = len(texts)
    if n == 0:
        return []
    proposals = near_duplicate_groups(cosine_distances(embeddings), threshold=threshold)
    if shown is not None:
        proposals = _within_shown(proposals, texts, shown)
    # A member whose numbers or names the leader's text lacks can never join, whatever the judge
    # says (stands_for), so only the other pairs are judged, and their token vectors (offline
    # judge) are computed in one forward pass rather than one per pair.
    judged = [
        (proposal[0], index)
        for proposal in proposals
        for index in proposal[1:]
        if _keeps_facts(texts[proposal[0]], texts[index])
    ]
    unknown = [(a, b) for a, b in judged if _verdict_key(judge, texts, embeddings, a, b) not in _VERDICTS]
    if isinstance(judge, BatchJudge) and unknown:
        # All of this call's new pairs in one pass (one token-model call), remembered as below.
        verdicts = judge.judge_pairs([_items(texts, embeddings, a, b) for a, b in unknown])
        for (a, b), verdict in zip(unknown, verdicts, strict=True):
            _remember_verdict(_verdict_key(judge, texts, embeddings, a, b), verdict)
    to_judge = set(judged)
    groups: list[DedupGroup] = []
    for proposal in proposals:
        leader, others = proposal[0], proposal[1:]
        kept = [leader]
        for index in others:
            joins = False
            if (leader, index) in to_judge:
                judgement = _judge_pair(judge, texts, embeddings, leader, index)
                joins = judgement.confidence >= min_confidence and _stands_for(
                    texts[leader], texts[index], judgement.relation, _newer(texts, leader, index) == leader
                )
            if joins:
                kept.append(index)
            else:
                groups.append(DedupGroup(members=[index], text=texts[index]))
        groups.append(DedupGroup(members=kept, text=texts[leader]))
    groups.sort(key=lambda group: group.members[0])
    return groups


def _within_shown(proposals: list[list[int]], texts: Sequence[str], shown: int) -> list[list[int]]:
    """The proposals whose leader can be among the first `shown` groups; the rest split into rows.

    A group starts at its leader or at a member that does not join. Whatever the judge says, every
    leader starts a group, and so does every member that cannot join (`_keeps_facts`); judging can
    only add starts. So the `shown`-th of these sure starts bounds the last group that can be shown:
    no leader after it is. (Groups are ordered by their first row, so rows after it never come
    before the first `shown` groups either.)

    Members are fact-checked in row order, and only until one lies past the bound the sure starts
    found so far give: a later member can no longer be among the first `shown` starts.
    """
    if shown < 1:
        return proposals
    sure = sorted(proposal[0] for proposal in proposals)
    members = sorted((index, proposal[0]) for proposal in proposals for index in proposal[1:])
    for index, leader in members:
        if len(sure) >= shown and index > sure[shown - 1]:
            break
        if not _keeps_facts(texts[leader], texts[index]):
            bisect.insort(sure, index)
    if len(sure) <= shown:
        return proposals
    last = sure[shown - 1]
    kept = [proposal for proposal in proposals if proposal[0] <= last]
    rest = [[i] for proposal in proposals if proposal[0] > last for i in proposal]
    return kept + rest


@lru_cache(maxsize=8192)
def _stands_for(kept: str, other: str, relation: str, kept_refines: bool) -> bool:
    return relation in MERGING_RELATIONS and stands_for(
        kept, other, relation=relation, kept_refines=kept_refines
    )


@lru_cache(maxsize=8192)
def _keeps_facts(kept: str, other: str) -> bool:
    """stands_for's condition that holds for every relation: no number or name of `other` lost."""
    return not loses_facts(kept, other)


def _items(texts: Sequence[str], embeddings: np.ndarray, a: int, b: int) -> tuple[JudgeItem, JudgeItem]:
    """(new, old) as _judge_pair hands them to the judge."""
    new = _newer(texts, a, b)
    old = a if new == b else b
    return JudgeItem(text=texts[new], embedding=embeddings[new]), JudgeItem(
        text=texts[old], embedding=embeddings[old]
    )


def _newer(texts: Sequence[str], a: int, b: int) -> int:
    """Which of two results plays "new" for the judge: the more informative one, since `refine` is
    directional (new adds detail to old) and two search results have no order in time."""
    return b if _information(texts[b]) >= _information(texts[a]) else a


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
    _stands_for.cache_clear()
    _keeps_facts.cache_clear()


def _verdict_key(
    judge: RelationJudge, texts: Sequence[str], embeddings: np.ndarray, a: int, b: int
) -> tuple[str, str, str, float]:
    new = _newer(texts, a, b)
    old = a if new == b else b
    distance = float(1.0 - np.dot(embeddings[new], embeddings[old]))
    return (judge.name, texts[new], texts[old], round(distance, 3))


def _judge_pair(
    judge: RelationJudge, texts: Sequence[str], embeddings: np.ndarray, a: int, b: int
) -> Judgement:
    """Judge two results with the more informative one as "new" (`_newer`)."""
    new = _newer(texts, a, b)
    old = a if new == b else b
    key = _verdict_key(judge, texts, embeddings, a, b)
    cached = _VERDICTS.get(key)
    if cached is not None:
        _VERDICTS.move_to_end(key)
        return cached
    verdict = judge.judge(
        JudgeItem(text=texts[new], embedding=embeddings[new]),
        [JudgeItem(text=texts[old], embedding=embeddings[old])],
    )[0]
    _remember_verdict(key, verdict)
    return verdict


def _remember_verdict(key: tuple[str, str, str, float], verdict: Judgement) -> None:
    _VERDICTS[key] = verdict
    _VERDICTS.move_to_end(key)
    if len(_VERDICTS) > _VERDICTS_MAX:
        _VERDICTS.popitem(last=False)
