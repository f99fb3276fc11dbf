"""Reads for the review screens: a cluster with its members, the queue order, the next cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import F, QuerySet

from memory_app.errors import not_found
from memory_app.models import DuplicateCluster, KeptApartPair, Memory, MemoryChange, Tenant
from memory_app.models.memory import MemoryStatus
from memory_app.models.review import ClusterStatus

NO_VECTORS = ("embedding", "search_vector")


def kept_apart_pairs(*, tenant: Tenant, memory_ids: Sequence[int]) -> set[tuple[int, int]]:
    """The pairs among `memory_ids` that a reviewer already declared different."""
    ids = list(set(memory_ids))
    if len(ids) < 2:
        return set()
    rows = KeptApartPair.objects.filter(tenant=tenant, memory_low__in=ids, memory_high__in=ids)
    return set(rows.values_list("memory_low_id", "memory_high_id"))


@dataclass
class MemberView:
    memory: Memory
    distance: float | None
    produced_by: list[MemoryChange] = field(default_factory=list)  # changes whose result it is
    consumed_by: list[MemoryChange] = field(default_factory=list)  # changes it went into
    supersedes_count: int = 0
    is_newest: bool = False
    is_richest: bool = False

    @property
    def is_active(self) -> bool:
        return self.memory.status == MemoryStatus.ACTIVE


@dataclass
class ClusterView:
    cluster: DuplicateCluster
    members: list[MemberView]
    kept_apart: set[tuple[int, int]]
    changes: list[MemoryChange]

    @property
    def active_members(self) -> list[MemberView]:
        return [m for m in self.members if m.is_active]


def pending_queue(*, tenant: Tenant | None) -> QuerySet[DuplicateCluster]:
    """Pending clusters, most confident first (the easy ones clear fast), then oldest first.
    `tenant=None` is the operator's cross-tenant queue."""
    qs = DuplicateCluster.objects.filter(status=ClusterStatus.PENDING)
    if tenant is not None:
        qs = qs.filter(tenant=tenant)
    return qs.order_by(F("confidence").desc(nulls_last=True), "created_at", "pk")


def next_pending_cluster(*, tenant: Tenant | None, after: DuplicateCluster | None = None) -> int | None:
    """The id of the cluster to review next (never `after` itself)."""
    qs = pending_queue(tenant=tenant)
    if after is not None:
        qs = qs.exclude(pk=after.pk)
    return qs.values_list("pk", flat=True).first()


def member_text(*, tenant: Tenant, cluster_id: int, memory_id: int) -> str | None:
    """The text of one member of a cluster (the reviewer's choice of surviving text)."""
    return (
        Memory.objects.filter(tenant=tenant, pk=memory_id, cluster_memberships__cluster_id=cluster_id)
        .values_list("text", flat=True)
        .first()
    )


def cluster_view(*, tenant: Tenant, cluster_id: int) -> ClusterView:
    cluster = (
        DuplicateCluster.objects.select_related("tenant", "resolved_by")
        .filter(tenant=tenant, pk=cluster_id)
        .first()
    )
    if cluster is None:
        raise not_found(f"Cluster {cluster_id}")
    rows = list(
        cluster.members.select_related("memory", "memory__superseded_by")
        .defer(*(f"memory__{f}" for f in NO_VECTORS), *(f"memory__superseded_by__{f}" for f in NO_VECTORS))
        .order_by("pk")
    )
    members = [MemberView(memory=r.memory, distance=r.distance) for r in rows]
    by_id = {m.memory.pk: m for m in members}
    ids = list(by_id)
    for change in MemoryChange.objects.filter(tenant=tenant, result_id__in=ids).order_by("-created_at"):
        by_id[change.result_id].produced_by.append(change)
    for change in (
        MemoryChange.objects.filter(tenant=tenant, sources__memory_id__in=ids)
        .annotate(source_memory_id=F("sources__memory_id"))
        .order_by("-created_at")
    ):
        by_id[change.source_memory_id].consumed_by.append(change)
    counts: dict[int, int] = {}
    for sid in Memory.objects.filter(tenant=tenant, superseded_by_id__in=ids).values_list(
        "superseded_by_id", flat=True
    ):
        counts[sid] = counts.get(sid, 0) + 1
    for m in members:
        m.supersedes_count = counts.get(m.memory.pk, 0)
    active = [m for m in members if m.is_active]
    if active:
        max(active, key=lambda m: (m.memory.created_at, m.memory.pk)).is_newest = True
        max(active, key=lambda m: (len(m.memory.text), m.memory.created_at)).is_richest = True
    changes = list(
        cluster.changes.select_related("actor_user", "undone_by", "result")
        .defer(*(f"result__{f}" for f in NO_VECTORS))
        .order_by("created_at")
    )
    return ClusterView(
        cluster=cluster,
        members=members,
        kept_apart=kept_apart_pairs(tenant=tenant, memory_ids=ids),
        changes=changes,
    )
