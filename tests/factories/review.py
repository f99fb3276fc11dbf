"""Planted review clusters for the admin tests and screenshots."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from django.utils import timezone

from memory_app.models import DuplicateCluster, Memory, Tenant
from memory_app.services.review.queue import review_cluster_create
from tests.factories import MemoryFactory


def plant_cluster(
    *,
    tenant: Tenant,
    texts: Sequence[str],
    verdict: str = "duplicate",
    confidence: float = 0.8,
    user_id: str = "user-1",
    namespace: str = "default",
    kind: str = "episodic",
    age: dt.timedelta = dt.timedelta(hours=2),
) -> tuple[DuplicateCluster, list[Memory]]:
    """Memories with the given texts (oldest first, an hour apart) queued as one pending cluster."""
    start = timezone.now() - age - dt.timedelta(hours=len(texts))
    members = [
        MemoryFactory(
            tenant=tenant,
            text=text,
            user_id=user_id,
            namespace=namespace,
            kind=kind,
            created_at=start + dt.timedelta(hours=i),
        )
        for i, text in enumerate(texts)
    ]
    distances = {m.pk: round(0.04 * i, 3) for i, m in enumerate(members)}
    cluster = review_cluster_create(
        tenant=tenant,
        memory_ids=[m.pk for m in members],
        verdict=verdict,
        confidence=confidence,
        max_distance=max(distances.values()),
        distances=distances,
    )
    assert cluster is not None
    DuplicateCluster.objects.filter(pk=cluster.pk).update(created_at=timezone.now() - age)
    cluster.refresh_from_db()
    return cluster, members
