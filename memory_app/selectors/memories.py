"""Reads of long-term memories. Every selector takes the tenant: no query runs unscoped."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from memory_app.errors import not_found
from memory_app.models import Memory, Tenant
from memory_app.models.memory import MemoryStatus


@dataclass(frozen=True)
class MemoryFilters:
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    session_id: str | None = None
    kind: str | None = None
    status: str | None = MemoryStatus.ACTIVE
    topic: str | None = None
    entity: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


def memory_list(*, tenant: Tenant, filters: MemoryFilters | None = None) -> QuerySet[Memory]:
    """A tenant's memories without their vectors, filtered; the caller paginates."""
    f = filters or MemoryFilters()
    qs = Memory.objects.filter(tenant=tenant).defer("embedding", "search_vector")
    for field in ("user_id", "agent_id", "namespace", "session_id", "kind", "status"):
        value = getattr(f, field)
        if value:
            qs = qs.filter(**{field: value})
    if f.topic:
        qs = qs.filter(topics__contains=[f.topic])
    if f.entity:
        qs = qs.filter(entities__contains=[f.entity])
    if f.created_after:
        qs = qs.filter(created_at__gte=f.created_after)
    if f.created_before:
        qs = qs.filter(created_at__lt=f.created_before)
    return qs


def memory_get(*, tenant: Tenant, memory_id: int, with_embedding: bool = False) -> Memory:
    qs = Memory.objects.filter(tenant=tenant)
    if not with_embedding:
        qs = qs.defer("embedding", "search_vector")
    memory = qs.filter(pk=memory_id).first()
    if memory is None:
        raise not_found(f"Memory {memory_id}")
    return memory
