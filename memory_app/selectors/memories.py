"""Reads of long-term memories. Every selector takes the tenant: no query runs unscoped."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import OuterRef, QuerySet

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


def memory_supersedes_attach(*, tenant: Tenant, memories: Iterable[Memory | None]) -> None:
    """Sets `supersedes_ids` on each memory: the ids of the memories it directly replaced (merged
    from or superseded), ascending. One query for the whole list, so a page or a search answer
    serializes `supersedes` without a query per row."""
    # A row read through `with_supersedes` has its ids already.
    rows = [m for m in memories if m is not None and getattr(m, "supersedes_ids", None) is None]
    replaced: dict[int, list[int]] = {m.pk: [] for m in rows}
    if replaced:
        pairs = (
            Memory.objects.filter(tenant=tenant, superseded_by_id__in=list(replaced))
            .order_by("id")
            .values_list("superseded_by_id", "id")
        )
        for successor, memory_id in pairs:
            replaced[successor].append(memory_id)
    for memory in rows:
        memory.supersedes_ids = replaced[memory.pk]  # type: ignore[attr-defined]


def with_supersedes(queryset: QuerySet[Memory], *, tenant: Tenant) -> QuerySet[Memory]:
    """The rows with `supersedes_ids` read in the same statement (an array sub-select on the
    foreign key's index): a store's or a search's answer then needs no second query."""
    replaced = (
        Memory.objects.filter(tenant=tenant, superseded_by_id=OuterRef("pk")).order_by("id").values("id")
    )
    return queryset.annotate(supersedes_ids=ArraySubquery(replaced))
