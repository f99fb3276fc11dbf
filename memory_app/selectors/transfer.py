"""Export of a whole tenant as JSONL records, lossless: memories with lineage, kept-apart pairs, review
clusters, procedures, sessions with their messages and agent profiles (see
memory_app/services/transfer.py for the format and the import)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import numpy as np
from django.db.models import Prefetch

from memory_app.models import (
    AgentProfile,
    ConversationSession,
    DuplicateCluster,
    KeptApartPair,
    Memory,
    MemoryChange,
    Procedure,
    Tenant,
)

FORMAT = "agent-memory-export"
# 2 added procedures, sessions with messages and agent profiles; a version 1 file still imports.
VERSION = 2
READABLE_VERSIONS = (1, 2)
PROCEDURE_FIELDS = (
    "user_id",
    "pattern",
    "pattern_hash",
    "pattern_embedding",
    "embedding_model",
    "tool_sequence",
    "execution_count",
    "avg_execution_time_ms",
    "avg_success_score",
    "created_at",
    "last_used_at",
)
SESSION_FIELDS = (
    "session_id",
    "user_id",
    "agent_id",
    "summary",
    "trimmed_count",
    "token_count",
    "created_at",
    "updated_at",
    "expires_at",
)
MESSAGE_FIELDS = ("position", "role", "speaker", "client_message_id", "content", "token_count", "created_at")
PROFILE_FIELDS = ("agent_id", "name", "config", "created_at", "updated_at")
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


def tenant_export_records(*, tenant: Tenant, batch_size: int = 2000) -> Iterator[dict[str, Any]]:
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
    yield from _kinds_records(tenant, batch_size)


def _kinds_records(tenant: Tenant, batch_size: int) -> Iterator[dict[str, Any]]:
    for procedure in Procedure.objects.filter(tenant=tenant).order_by("pk").iterator(batch_size):
        yield {"type": "procedure", **{name: _out(getattr(procedure, name)) for name in PROCEDURE_FIELDS}}
    # Messages are read per session: a session holds at most its context window's worth.
    for session in ConversationSession.objects.filter(tenant=tenant).order_by("pk").iterator(batch_size):
        messages = session.messages.order_by("position").values_list(*MESSAGE_FIELDS)
        yield {
            "type": "session",
            **{name: _out(getattr(session, name)) for name in SESSION_FIELDS},
            "messages": [{k: _out(v) for k, v in zip(MESSAGE_FIELDS, row, strict=True)} for row in messages],
        }
    for profile in AgentProfile.objects.filter(tenant=tenant).order_by("pk"):
        yield {"type": "agent_profile", **{name: _out(getattr(profile, name)) for name in PROFILE_FIELDS}}


# The name the export command and its tests have used since version 1.
memory_export_records = tenant_export_records
