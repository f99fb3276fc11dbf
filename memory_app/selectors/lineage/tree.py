"""A memory's lineage as two trees of model rows for the admin: what it was made from and what
replaced it, undone changes included (the API's dict form is selectors/lineage/graph.py).

Trees alternate change and memory levels: memory → the changes that made it (each with its
sources) → the changes that made those, and so on; likewise upward to what replaced it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_app.errors import not_found
from memory_app.models import Memory, MemoryChange, Tenant

NO_VECTORS = ("embedding", "search_vector")
MAX_DEPTH = 8
MAX_NODES = 200  # a runaway history still renders as a page, not a timeout


@dataclass
class ChangeNode:
    change: MemoryChange
    memories: list[MemoryNode] = field(default_factory=list)


@dataclass
class MemoryNode:
    memory: Memory
    changes: list[ChangeNode] = field(default_factory=list)
    truncated: bool = False  # a cycle, the depth limit or the node budget stopped the walk here


@dataclass
class Lineage:
    memory: Memory
    origins: list[ChangeNode]  # changes whose result is the memory, with their sources, recursively
    successors: list[ChangeNode]  # changes that consumed the memory, with their results, recursively


class _Walk:
    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.left = MAX_NODES

    def _changes(self, memory_id: int, upward: bool) -> list[MemoryChange]:
        qs = MemoryChange.objects.filter(tenant=self.tenant)
        qs = qs.filter(sources__memory_id=memory_id) if upward else qs.filter(result_id=memory_id)
        return list(
            qs.select_related("actor_user", "undone_by")
            .prefetch_related("sources")
            .order_by("-created_at", "-pk")
        )

    def tree(self, memory_id: int, *, upward: bool, depth: int, seen: frozenset[int]) -> list[ChangeNode]:
        changes = self._changes(memory_id, upward)
        ids = (
            {c.result_id for c in changes}
            if upward
            else {s.memory_id for c in changes for s in c.sources.all()}
        )
        rows = {m.pk: m for m in Memory.objects.filter(tenant=self.tenant, pk__in=ids).defer(*NO_VECTORS)}
        out = []
        for change in changes:
            node = ChangeNode(change=change)
            linked = [change.result_id] if upward else [s.memory_id for s in change.sources.all()]
            for mid in linked:
                if mid not in rows or self.left <= 0:
                    continue
                self.left -= 1
                child = MemoryNode(memory=rows[mid])
                if mid in seen or depth >= MAX_DEPTH:
                    child.truncated = True
                else:
                    child.changes = self.tree(mid, upward=upward, depth=depth + 1, seen=seen | {mid})
                node.memories.append(child)
            out.append(node)
        return out


def memory_lineage_tree(*, tenant: Tenant, memory_id: int) -> Lineage:
    memory = (
        Memory.objects.select_related("tenant").filter(tenant=tenant, pk=memory_id).defer(*NO_VECTORS).first()
    )
    if memory is None:
        raise not_found(f"Memory {memory_id}")
    walk = _Walk(tenant)
    seen = frozenset({memory.pk})
    return Lineage(
        memory=memory,
        origins=walk.tree(memory.pk, upward=False, depth=0, seen=seen),
        successors=walk.tree(memory.pk, upward=True, depth=0, seen=seen),
    )
