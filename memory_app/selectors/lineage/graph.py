"""The lineage of one memory: what it was made from (recursively) and what replaced it."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch

from memory_app.models import Memory, MemoryChange, MemoryChangeSource, Tenant
from memory_app.selectors.memories import memory_get

MAX_DEPTH = 25


def _memory_brief(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.pk,
        "text": memory.text,
        "status": memory.status,
        "created_at": memory.created_at,
        "superseded_by": memory.superseded_by_id,
    }


def _change_brief(change: MemoryChange) -> dict[str, Any]:
    return {
        "id": change.pk,
        "operation": change.operation,
        "relation": change.relation,
        "actor": change.actor_type,
        "confidence": change.confidence,
        "reason": change.reason,
        "created_at": change.created_at,
        "undone_at": change.undone_at,
    }


def _derived_from(tenant: Tenant, memory_id: int, depth: int, seen: set[int]) -> list[dict[str, Any]]:
    """The changes whose result is this memory, each with its sources' own derivations."""
    if depth >= MAX_DEPTH:
        return []
    changes = (
        MemoryChange.objects.filter(tenant=tenant, result_id=memory_id)
        .prefetch_related(
            Prefetch(
                "sources",
                queryset=MemoryChangeSource.objects.filter(memory__tenant=tenant)
                .select_related("memory")
                .defer("snapshot", "memory__embedding", "memory__search_vector"),
            )
        )
        .order_by("created_at", "pk")
    )
    nodes = []
    for change in changes:
        sources = []
        for source in sorted(change.sources.all(), key=lambda s: s.memory_id):
            memory = source.memory
            sub = [] if memory.pk in seen else _derived_from(tenant, memory.pk, depth + 1, seen | {memory.pk})
            sources.append({"memory": _memory_brief(memory), "derived_from": sub})
        nodes.append({"change": _change_brief(change), "sources": sources})
    return nodes


def _replaced_by(tenant: Tenant, memory: Memory) -> list[dict[str, Any]]:
    """The chain of successors: each memory that replaced the previous one and the change that did it."""
    chain: list[dict[str, Any]] = []
    seen = {memory.pk}
    current = memory
    while current.superseded_by_id and current.superseded_by_id not in seen and len(chain) < MAX_DEPTH:
        successor = Memory.objects.defer("embedding", "search_vector").get(
            tenant=tenant, pk=current.superseded_by_id
        )
        link = (
            MemoryChangeSource.objects.filter(
                change__tenant=tenant,
                memory_id=current.pk,
                change__result_id=successor.pk,
                change__undone_at__isnull=True,
            )
            .select_related("change")
            .order_by("-change__created_at")
            .first()
        )
        chain.append({"memory": _memory_brief(successor), "change": link and _change_brief(link.change)})
        seen.add(successor.pk)
        current = successor
    return chain


def memory_lineage(*, tenant: Tenant, memory_id: int) -> dict[str, Any]:
    memory = memory_get(tenant=tenant, memory_id=memory_id)
    return {
        "memory": _memory_brief(memory),
        "derived_from": _derived_from(tenant, memory.pk, 0, {memory.pk}),
        "superseded_by": _replaced_by(tenant, memory),
    }
