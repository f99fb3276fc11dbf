"""Export of a tenant's memories as JSONL records, lossless including lineage (see
memory_app/services/transfer.py for the format and the import)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import numpy as np
from django.db.models import Prefetch

from memory_app.models import DuplicateCluster, KeptApartPair, Memory, MemoryChange, Tenant

FORMAT = "agent-memory-export"
VERSION = 1
MEMORY_SKIP = {"id", "tenant_id", "search_vector", "superseded_by_id"}
CHANGE_FIELDS = ("operation", "relation", "actor_type", "reason", "confidence", "created_at", "undone_at")
CLUSTER_FIELDS = (
    "user_id",
    "namespace",
    "kind",
    "status",
    "origin",
    "verdict",
    "confidence",
    "max_distance",
    "reason",
    "created_at",
    "resolved_at",
)


def _out(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, np.ndarray):
        return [float(x) for x in value.astype(np.float32)]
    return value


def _username(user: Any) -> str | None:
    return None if user is None else user.get_username()


def memory_fields() -> list[str]:
    return [f.attname for f in Memory._meta.concrete_fields if f.attname not in MEMORY_SKIP]


def memory_export_records(*, tenant: Tenant, batch_size: int = 2000) -> Iterator[dict[str, Any]]:
    """The tenant's records, streamed in id order (memories read in batches, vectors included)."""
    yield {"type": "header", "format": FORMAT, "version": VERSION, "tenant": tenant.slug, "name": tenant.name}
    fields = memory_fields()
    for memory in (
        Memory.objects.filter(tenant=tenant).defer("search_vector").order_by("pk").iterator(batch_size)
    ):
        record = {"type": "memory", "id": memory.pk, "superseded_by_id": memory.superseded_by_id}
        record.update({name: _out(getattr(memory, name)) for name in fields})
        yield record
    changes = MemoryChange.objects.filter(tenant=tenant).select_related("actor_user", "undone_by")
    for change in changes.prefetch_related("sources").order_by("pk"):
        yield {
            "type": "change",
            "id": change.pk,
            "result_id": change.result_id,
            **{name: _out(getattr(change, name)) for name in CHANGE_FIELDS},
            "actor_user": _username(change.actor_user),
            "undone_by": _username(change.undone_by),
            "sources": [
                {"memory_id": s.memory_id, "snapshot": s.snapshot}
                for s in sorted(change.sources.all(), key=lambda s: s.pk)
            ],
        }
    for pair in KeptApartPair.objects.filter(tenant=tenant).select_related("created_by").order_by("pk"):
        yield {
            "type": "kept_apart",
            "memory_low_id": pair.memory_low_id,
            "memory_high_id": pair.memory_high_id,
            "created_at": _out(pair.created_at),
            "created_by": _username(pair.created_by),
        }
    clusters = DuplicateCluster.objects.filter(tenant=tenant).select_related("resolved_by")
    own_changes = Prefetch("changes", queryset=MemoryChange.objects.filter(tenant=tenant).only("pk"))
    for cluster in clusters.prefetch_related("members", own_changes).order_by("pk"):
        yield {
            "type": "cluster",
            **{name: _out(getattr(cluster, name)) for name in CLUSTER_FIELDS},
            "resolved_by": _username(cluster.resolved_by),
            "members": [
                {"memory_id": m.memory_id, "distance": m.distance}
                for m in sorted(cluster.members.all(), key=lambda m: m.pk)
            ],
            "change_ids": sorted(c.pk for c in cluster.changes.all()),
        }
