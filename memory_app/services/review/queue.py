"""The review queue: clusters of possible duplicates that a person decides on."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from django.db import transaction

from memory_app.db import execute_all, insert_sql, mark_saved
from memory_app.errors import ApplicationError
from memory_app.models import ClusterMember, DuplicateCluster, Memory, Tenant
from memory_app.models.review import ClusterOrigin, ClusterStatus
from memory_app.selectors.review import kept_apart_pairs
from memory_app.services.lineage.apart import ordered_pair


# No savepoint of its own: the write path calls it inside its transaction (scope lock held), where
# one would only add two round trips; an error here rolls the caller back as well, and no caller
# catches one to carry on.
@transaction.atomic(savepoint=False)
def review_cluster_create(
    *,
    tenant: Tenant,
    memory_ids: Sequence[int],
    verdict: str = "",
    confidence: float | None = None,
    max_distance: float | None = None,
    distances: dict[int, float] | None = None,
    origin: str = ClusterOrigin.STORE,
    reason: str = "",
    new_memory: Memory | None = None,
) -> DuplicateCluster | None:
    """Queue memories for review; None when every pair was kept apart or the set is already pending.

    `new_memory`: a member inserted in the caller's transaction (the write path's). Such a row is in
    no kept-apart pair and no pending cluster yet, so those two lookups are skipped, and its scope
    is the cluster's.
    """
    ids = list(dict.fromkeys(memory_ids))
    if len(ids) < 2:
        raise ApplicationError("A review cluster needs at least two memories.")
    if new_memory is None or new_memory.pk not in ids:
        apart = kept_apart_pairs(tenant=tenant, memory_ids=ids)
        if all(ordered_pair(a, b) in apart for a, b in combinations(ids, 2)):
            return None
        pending = ClusterMember.objects.filter(
            cluster__tenant=tenant, cluster__status=ClusterStatus.PENDING, memory_id__in=ids
        ).values_list("cluster_id", "memory_id")
        by_cluster: dict[int, set[int]] = {}
        for cluster_id, memory_id in pending:
            by_cluster.setdefault(cluster_id, set()).add(memory_id)
        if any(members >= set(ids) for members in by_cluster.values()):
            return None
    first = new_memory or Memory.objects.only("user_id", "namespace", "kind").get(tenant=tenant, pk=ids[0])
    cluster = DuplicateCluster(
        tenant=tenant,
        user_id=first.user_id,
        namespace=first.namespace,
        kind=first.kind,
        origin=origin,
        verdict=verdict,
        confidence=confidence,
        max_distance=max_distance,
        reason=reason,
    )
    # The cluster and its members in one statement: half the stores of a real workload end here.
    cluster_sql, params = insert_sql(DuplicateCluster, [cluster])
    [(cluster.pk,)] = execute_all(
        [
            (
                f"WITH c AS ({cluster_sql} RETURNING id), members AS ("
                f"INSERT INTO {ClusterMember._meta.db_table} (cluster_id, memory_id, distance) "
                "SELECT c.id, m.memory_id, m.distance FROM c, unnest(%s::bigint[], %s::float8[]) "
                "AS m(memory_id, distance)) SELECT id FROM c",
                [*params, ids, [(distances or {}).get(mid) for mid in ids]],
            )
        ]
    )
    return mark_saved(cluster)
