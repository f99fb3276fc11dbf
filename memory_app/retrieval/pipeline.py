"""The load-time part of search on already-scored rows: dedup -> DBSCAN clustering -> MMR.

Pure: texts, vectors and scores in; entries (groups of input indices) out. The search selector and
bench/pipeline.py both call it, so the benchmark measures exactly what a request runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory_app.judge.base import RelationJudge
from memory_app.retrieval.clustering import NOISE, ClusterStats, cluster_stats, cosine_distances, dbscan
from memory_app.retrieval.dedup import DedupGroup, dedup_groups
from memory_app.retrieval.mmr import cosine_similarities, jaccard_similarities, mmr_order

_blas_limited = False


def single_threaded_blas() -> None:
    """Run BLAS on one thread in this process (once). The matrices here are 50-150 rows: threads
    cannot speed them up, and on a busy machine waking them cost 50-100 ms a call (measured in
    bench/pipeline.py: p50 0.3 ms vs 55-115 ms for DBSCAN and MMR on 50 rows under load)."""
    global _blas_limited
    if not _blas_limited:
        # start-up cost: inspects the loaded BLAS libraries on import
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
        _blas_limited = True


@dataclass(frozen=True)
class Entry:
    members: list[int]  # input indices, best first
    text: str
    score: float  # the best member's score
    cluster: int | None


@dataclass(frozen=True)
class PipelineOutcome:
    entries: list[Entry]
    stats: ClusterStats | None  # None when clustering is off


def run_pipeline(
    *,
    texts: Sequence[str],
    embeddings: np.ndarray | None,
    scores: np.ndarray,
    limit: int,
    deduplicate: bool,
    dedup_threshold: float,
    dedup_min_confidence: float = 0.0,
    judge: RelationJudge | None,
    clustering: bool,
    epsilon: float,
    min_points: int,
    mmr: bool,
    mmr_lambda: float,
) -> PipelineOutcome:
    """Inputs are in rank order (best first); returns at most `limit` entries."""
    single_threaded_blas()
    if deduplicate and embeddings is not None and judge is not None:
        groups = dedup_groups(
            texts,
            embeddings,
            threshold=dedup_threshold,
            judge=judge,
            min_confidence=dedup_min_confidence,
            # Without MMR the first `limit` groups are what is returned: only their leaders' pairs
            # are judged (context/all's episodic part shows 60 of ~180 rows). MMR picks from all.
            shown=None if mmr else limit,
        )
    else:
        groups = [DedupGroup(members=[i], text=texts[i]) for i in range(len(texts))]
    leaders = [group.members[0] for group in groups]
    labels = np.full(len(groups), NOISE)
    stats = None
    if clustering and embeddings is not None and groups:
        labels = dbscan(cosine_distances(embeddings[leaders]), epsilon=epsilon, min_points=min_points)
        stats = cluster_stats(labels)
    order = list(range(len(groups)))
    if mmr and len(groups) > 1:
        if embeddings is not None:
            similarities = cosine_similarities(embeddings[leaders])
        else:
            similarities = jaccard_similarities([group.text for group in groups])
        order = mmr_order(scores[leaders], similarities, lambda_=mmr_lambda, k=limit)
    entries = [
        Entry(
            members=groups[g].members,
            text=groups[g].text,
            score=float(scores[leaders[g]]),
            cluster=None if labels[g] == NOISE else int(labels[g]),
        )
        for g in order[:limit]
    ]
    return PipelineOutcome(entries=entries, stats=stats)
