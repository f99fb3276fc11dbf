"""Counts for `manage.py memory_stats`: rows by kind and status, models, lineage, review queue, jobs."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from memory_app.db import fetch_one
from memory_app.models import DuplicateCluster, MaintenanceJob, Memory, MemoryChange, ReindexVector, Tenant
from memory_app.models.review import ClusterStatus


def memory_stats(*, tenant: Tenant, top_scopes: int = 5) -> dict[str, Any]:
    memories = Memory.objects.filter(tenant=tenant)
    by_kind_status: dict[str, dict[str, int]] = {}
    for kind, status, n in memories.values_list("kind", "status").annotate(n=Count("id")).order_by():
        by_kind_status.setdefault(kind, {})[status] = n
    models = dict(
        memories.exclude(embedding_model="").values_list("embedding_model").annotate(n=Count("id")).order_by()
    )
    largest = (
        memories.filter(status="active")
        .values_list("user_id", "namespace", "kind")
        .annotate(n=Count("id"))
        .order_by("-n")[:top_scopes]
    )
    changes = MemoryChange.objects.filter(tenant=tenant).aggregate(
        merges=Count("id", filter=Q(operation="merge")),
        supersedes=Count("id", filter=Q(operation="supersede")),
        undone=Count("id", filter=Q(undone_at__isnull=False)),
    )
    return {
        "tenant": tenant.slug,
        "memories": by_kind_status,
        "total": sum(sum(v.values()) for v in by_kind_status.values()),
        "without_embedding": memories.filter(embedding__isnull=True).count(),
        "embedding_models": models,
        "largest_scopes": [
            {"user_id": u, "namespace": ns, "kind": k, "active": n} for u, ns, k, n in largest
        ],
        "changes": changes,
        "review_pending": DuplicateCluster.objects.filter(
            tenant=tenant, status=ClusterStatus.PENDING
        ).count(),
        "reindex_vectors_built": ReindexVector.objects.filter(memory__tenant=tenant).count(),
        "jobs": [
            {"id": j.pk, "kind": j.kind, "status": j.status, "created_at": j.created_at.isoformat()}
            for j in MaintenanceJob.objects.filter(tenant=tenant).order_by("-created_at")[:5]
        ],
    }


def storage_stats() -> dict[str, int]:
    """Store-wide sizes (bytes) of the memory table and its indexes."""
    row = fetch_one(
        "SELECT pg_total_relation_size(%s::regclass), pg_indexes_size(%s::regclass)",
        [Memory._meta.db_table, Memory._meta.db_table],
    )
    total, indexes = row or (0, 0)
    return {"memory_table_total_bytes": int(total), "memory_indexes_bytes": int(indexes)}
