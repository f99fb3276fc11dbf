"""Pairs of memories a person declared different (`KeptApartPair`): recorded by the review
decisions (services/review/clusters.py) and by the undo of a merge (changes.py), read before any
merge or review (selectors/review.kept_apart_pairs). Here, below review, because both review and
lineage record them and review calls lineage."""

from __future__ import annotations

import datetime as dt

from memory_app.models import KeptApartPair, Tenant
from memory_app.services.actors import Actor


def ordered_pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def pairs_keep_apart(*, tenant: Tenant, pairs: set[tuple[int, int]], actor: Actor, now: dt.datetime) -> None:
    """Record each (low, high) pair as different: neither store, compaction nor the queue joins
    it again until a person merges it. A pair kept apart earlier stays as it was."""
    KeptApartPair.objects.bulk_create(
        [
            KeptApartPair(
                tenant=tenant,
                memory_low_id=lo,
                memory_high_id=hi,
                created_at=now,
                created_by=actor.user_or_none,
            )
            for lo, hi in sorted(pairs)
        ],
        ignore_conflicts=True,
    )
