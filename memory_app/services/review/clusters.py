"""Resolving a review cluster: merge, keep apart, split, mark as update, bulk merge or keep apart,
and undo.

Each resolution goes through the lineage services (so nothing is destroyed and every change can be
undone), records who decided, and links the resulting changes to the cluster.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from django.db import transaction
from django.utils import timezone

from memory_app.errors import ApplicationError, not_found
from memory_app.judge.signals.relations import difference
from memory_app.models import DuplicateCluster, KeptApartPair, Memory, MemoryChange, Tenant
from memory_app.models.lineage import ChangeRelation
from memory_app.models.memory import MemoryStatus
from memory_app.models.review import ClusterStatus
from memory_app.services.actors import Actor
from memory_app.services.lineage.apart import ordered_pair, pairs_keep_apart
from memory_app.services.lineage.changes import memory_change_undo, memory_merge, memory_supersede


def _lock_pending(tenant: Tenant, cluster_id: int) -> DuplicateCluster:
    cluster = DuplicateCluster.objects.select_for_update().filter(tenant=tenant, pk=cluster_id).first()
    if cluster is None:
        raise not_found(f"Cluster {cluster_id}")
    if cluster.status != ClusterStatus.PENDING:
        raise ApplicationError(
            f"Cluster {cluster_id} was already resolved ({cluster.get_status_display().lower()}); "
            "undo it first to decide again.",
            code="conflict",
            status=409,
        )
    return cluster


def _member_ids(cluster: DuplicateCluster) -> list[int]:
    return list(cluster.members.order_by("pk").values_list("memory_id", flat=True))


def _active_member_ids(cluster: DuplicateCluster) -> list[int]:
    return list(
        Memory.objects.filter(
            tenant_id=cluster.tenant_id, cluster_memberships__cluster=cluster, status=MemoryStatus.ACTIVE
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _check_members(cluster: DuplicateCluster, ids: Sequence[int]) -> None:
    unknown = sorted(set(ids) - set(_member_ids(cluster)))
    if unknown:
        raise ApplicationError(
            f"Memories {unknown} are not members of cluster {cluster.pk}.",
            fields={"memory_ids": ["Choose members of this cluster."]},
        )


def _resolve(
    cluster: DuplicateCluster,
    status: str,
    actor: Actor,
    changes: Sequence[MemoryChange],
    now: dt.datetime | None = None,
) -> None:
    cluster.status = status
    # The same instant as the kept-apart pairs it records, so undo can tell them from older pairs.
    cluster.resolved_at = now or timezone.now()
    cluster.resolved_by = actor.user_or_none
    cluster.save(update_fields=["status", "resolved_at", "resolved_by"])
    if changes:
        cluster.changes.add(*changes)


@transaction.atomic
def cluster_merge(
    *,
    tenant: Tenant,
    cluster_id: int,
    actor: Actor,
    memory_ids: Sequence[int] | None = None,
    text: str | None = None,
    reason: str = "",
) -> DuplicateCluster:
    """Merge the cluster's active members (or the chosen ones) into one memory.

    `text` is the surviving text: a member's text, an edited one (embedded anew), or None for the
    most informative member's.
    """
    cluster = _lock_pending(tenant, cluster_id)
    ids = list(memory_ids) if memory_ids is not None else _active_member_ids(cluster)
    _check_members(cluster, ids)
    if len(set(ids)) < 2:
        raise ApplicationError(
            "A merge needs at least two active members; keep the cluster apart instead.",
            fields={"memory_ids": ["Choose two or more."]},
        )
    relation = ChangeRelation.REFINE if cluster.verdict == ChangeRelation.REFINE else ChangeRelation.DUPLICATE
    change = memory_merge(
        tenant=tenant,
        memory_ids=ids,
        text=text,
        relation=relation,
        actor=actor,
        reason=reason or f"review of cluster {cluster.pk}",
        confidence=cluster.confidence,
    )
    _resolve(cluster, ClusterStatus.MERGED, actor, [change])
    return cluster


@transaction.atomic
def cluster_keep_apart(*, tenant: Tenant, cluster_id: int, actor: Actor) -> DuplicateCluster:
    """The members say different things: record every pair so none is suggested again."""
    cluster = _lock_pending(tenant, cluster_id)
    pairs = {ordered_pair(a, b) for a, b in combinations(_member_ids(cluster), 2)}
    now = timezone.now()
    pairs_keep_apart(tenant=tenant, pairs=pairs, actor=actor, now=now)
    _resolve(cluster, ClusterStatus.KEPT_APART, actor, [], now)
    return cluster


@transaction.atomic
def cluster_split(
    *, tenant: Tenant, cluster_id: int, groups: Sequence[Sequence[int]], actor: Actor
) -> DuplicateCluster:
    """Merge each group of two or more separately; members in different groups are kept apart.

    A group of one leaves that memory as it is. Members in no group are left alone and not kept
    apart (the reviewer made no claim about them).
    """
    cluster = _lock_pending(tenant, cluster_id)
    groups = [list(dict.fromkeys(g)) for g in groups if g]
    flat = [m for g in groups for m in g]
    if len(flat) != len(set(flat)):
        raise ApplicationError(
            "A memory can be in only one group.", fields={"groups": ["Put each memory in one group."]}
        )
    _check_members(cluster, flat)
    if len(groups) < 2:
        raise ApplicationError(
            "A split needs at least two groups; use merge or keep apart for one decision on all.",
            fields={"groups": ["Put the members into two or more groups."]},
        )
    changes = [
        memory_merge(
            tenant=tenant,
            memory_ids=g,
            actor=actor,
            reason=f"split of cluster {cluster.pk}",
            confidence=cluster.confidence,
        )
        for g in groups
        if len(g) >= 2
    ]
    apart = {ordered_pair(a, b) for g1, g2 in combinations(groups, 2) for a in g1 for b in g2}
    now = timezone.now()
    pairs_keep_apart(tenant=tenant, pairs=apart, actor=actor, now=now)
    _resolve(cluster, ClusterStatus.SPLIT, actor, changes, now)
    return cluster


@transaction.atomic
def cluster_mark_update(
    *, tenant: Tenant, cluster_id: int, actor: Actor, newest_id: int | None = None
) -> DuplicateCluster:
    """The members are successive values of one attribute: the newest supersedes each older one."""
    cluster = _lock_pending(tenant, cluster_id)
    active = list(
        Memory.objects.filter(
            tenant_id=cluster.tenant_id, cluster_memberships__cluster=cluster, status=MemoryStatus.ACTIVE
        )
        .defer("embedding", "search_vector")
        .order_by("created_at", "pk")
    )
    if len(active) < 2:
        raise ApplicationError("Marking as update needs at least two active members.", code="conflict")
    if newest_id is None:
        newest = active[-1]
    else:
        _check_members(cluster, [newest_id])
        chosen = next((m for m in active if m.pk == newest_id), None)
        if chosen is None:
            raise ApplicationError(f"Memory {newest_id} is not active.", code="conflict", status=409)
        newest = chosen
    changes = [
        memory_supersede(
            tenant=tenant,
            old_id=old.pk,
            new_id=newest.pk,
            actor=actor,
            reason=f"review of cluster {cluster.pk}",
            confidence=cluster.confidence,
        )
        for old in active
        if old.pk != newest.pk
    ]
    _resolve(cluster, ClusterStatus.SUPERSEDED, actor, changes)
    return cluster


@dataclass
class BulkReport:
    resolved: list[DuplicateCluster] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (cluster id, why)


def _bulk(
    resolve: Callable[..., DuplicateCluster], *, tenant: Tenant, cluster_ids: Sequence[int], actor: Actor
) -> BulkReport:
    """`resolve` each cluster in its own savepoint: one that cannot be resolved (already resolved,
    members changed) is skipped with its reason, and the others still are."""
    report = BulkReport()
    for cluster_id in sorted(set(cluster_ids)):
        try:
            with transaction.atomic():
                report.resolved.append(resolve(tenant=tenant, cluster_id=cluster_id, actor=actor))
        except ApplicationError as exc:
            report.skipped.append((cluster_id, exc.message))
    return report


def cluster_differences(cluster: DuplicateCluster) -> list[str]:
    """The hard differences between the cluster's member texts (judge.signals.relations.difference):
    a sign, a number, a name or a negation that a merge would lose or contradict."""
    texts = list(
        Memory.objects.filter(tenant_id=cluster.tenant_id, cluster_memberships__cluster=cluster)
        .order_by("pk")
        .values_list("text", flat=True)
    )
    found = (difference(a, b) for a, b in combinations(texts, 2))
    return list(dict.fromkeys(d for d in found if d))


def _merge_without_difference(*, tenant: Tenant, cluster_id: int, actor: Actor) -> DuplicateCluster:
    cluster = _lock_pending(tenant, cluster_id)
    differs = cluster_differences(cluster)
    if differs:
        raise ApplicationError(
            f"Cluster {cluster_id} was not merged: its texts differ in {'; '.join(differs)}. "
            "Open it and merge it alone if they really say the same.",
            code="conflict",
            status=409,
        )
    return cluster_merge(tenant=tenant, cluster_id=cluster_id, actor=actor)


@transaction.atomic
def cluster_bulk_merge(*, tenant: Tenant, cluster_ids: Sequence[int], actor: Actor) -> BulkReport:
    """Merge each cluster with its most informative text; a cluster whose texts differ in a sign,
    a number, a name or a negation is refused and reported, never merged in bulk."""
    return _bulk(_merge_without_difference, tenant=tenant, cluster_ids=cluster_ids, actor=actor)


@transaction.atomic
def cluster_bulk_keep_apart(*, tenant: Tenant, cluster_ids: Sequence[int], actor: Actor) -> BulkReport:
    """Keep each cluster's members apart: an operator clearing a page of pairs that only share a
    person or a topic, each pair recorded so it is never suggested again."""
    return _bulk(cluster_keep_apart, tenant=tenant, cluster_ids=cluster_ids, actor=actor)


@transaction.atomic
def cluster_undo(*, tenant: Tenant, cluster_id: int, actor: Actor) -> DuplicateCluster:
    """Undo a resolution: every change of the cluster (newest first), the pairs it kept apart,
    and put the cluster back in the queue as pending."""
    cluster = DuplicateCluster.objects.select_for_update().filter(tenant=tenant, pk=cluster_id).first()
    if cluster is None:
        raise not_found(f"Cluster {cluster_id}")
    if cluster.status == ClusterStatus.PENDING:
        raise ApplicationError(f"Cluster {cluster_id} is pending; there is nothing to undo.", code="conflict")
    for change in cluster.changes.filter(tenant=tenant, undone_at__isnull=True).order_by(
        "-created_at", "-pk"
    ):
        memory_change_undo(tenant=tenant, change_id=change.pk, actor=actor)
    if cluster.resolved_at is not None:
        # Only the pairs this decision recorded; a pair kept apart earlier by another decision stays.
        ids = _member_ids(cluster)
        KeptApartPair.objects.filter(
            tenant=tenant, memory_low__in=ids, memory_high__in=ids, created_at__gte=cluster.resolved_at
        ).delete()
    cluster.status = ClusterStatus.PENDING
    cluster.resolved_at = None
    cluster.resolved_by = None
    cluster.save(update_fields=["status", "resolved_at", "resolved_by"])
    return cluster


@transaction.atomic
def change_undo(*, tenant: Tenant, change_id: int, actor: Actor) -> list[DuplicateCluster]:
    """Undo one change from the lineage view. A change made by a review decision undoes that whole
    decision (all its changes) and reopens the cluster, so a cluster never claims a merge that is
    gone. Returns the clusters reopened."""
    clusters = list(
        DuplicateCluster.objects.filter(tenant=tenant, changes__pk=change_id)
        .exclude(status=ClusterStatus.PENDING)
        .order_by("pk")
    )
    if not clusters:
        memory_change_undo(tenant=tenant, change_id=change_id, actor=actor)
        return []
    return [cluster_undo(tenant=tenant, cluster_id=c.pk, actor=actor) for c in clusters]
