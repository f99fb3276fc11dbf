"""Store-time candidates: the active memories of one scope within a cosine-distance radius.

The plan depends on the scope's size (see "Vector search on this stack, measured"):
- small scope (<= STORE_EXACT_SCOPE_MAX active rows, the common case: one user's memories): its rows
  through the B-tree `memory_scope_idx` in a MATERIALIZED CTE, ordered by exact distance. Exact recall.
- large scope: the HNSW index with `hnsw.iterative_scan = relaxed_order` and `hnsw.ef_search` set
  locally in the caller's transaction, so the scope filter cannot starve the LIMIT.
In both, the radius is applied outside the LIMIT: inside, an unsatisfiable radius would make the
index scan walk tens of thousands of tuples.

A memory about a named person (`metadata.about`, set by conversation ingestion) is only compared
with memories about the same person: in one user's scope holding several speakers, "Melanie's kids
love the park" and Caroline's message about the park are close in meaning but never the same memory,
and a merge between them put one speaker's text under the other's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import DEFAULT_DB_ALIAS, connection, transaction

from memory_app.conf import store_config
from memory_app.db import (
    LargeScopes,
    count_up_to,
    fetch_all,
    fetch_all_with,
    hnsw_settings,
    vector_literal,
)
from memory_app.models import Memory, Tenant
from memory_app.models.memory import MemoryStatus


@dataclass(frozen=True)
class Scope:
    user_id: str
    namespace: str
    kind: str


@dataclass(frozen=True)
class Neighbour:
    memory_id: int
    text: str
    created_at: datetime
    distance: float  # cosine distance to the query vector, computed by pgvector


_SCOPE_WHERE = "tenant_id = %s AND user_id = %s AND namespace = %s AND kind = %s AND status = %s"


# A large scope's count (one round trip per store) is skipped for 5 minutes (db.LargeScopes).
_large_scopes = LargeScopes(ttl=300.0)


def scope_is_small(*, tenant: Tenant, scope: Scope, limit: int | None = None) -> bool:
    """Counts at most limit+1 rows (an index-only scan of memory_scope_idx), so it stays cheap."""
    limit = store_config().exact_scope_max if limit is None else limit
    key = (tenant.pk, scope.user_id, scope.namespace, scope.kind, limit)
    if key in _large_scopes:
        return False
    params = [tenant.pk, scope.user_id, scope.namespace, scope.kind, MemoryStatus.ACTIVE]
    small = (
        count_up_to(table=Memory._meta.db_table, where=_SCOPE_WHERE, params=params, limit=limit + 1) <= limit
    )
    if not small:
        _large_scopes.add(key)
    return small


# The join names the tenant too: on Citus a join by id alone would reach every shard.
_ROWS = f"""
        SELECT m.id, m.text, m.created_at, n.distance
        FROM nearest n JOIN {Memory._meta.db_table} m ON m.id = n.id
        WHERE m.tenant_id = %s AND n.distance <= %s ORDER BY n.distance, m.id"""


_ABOUT_WHERE = " AND metadata->>'about' = %s"


def _exact_sql(table: str, *, about: bool = False) -> str:
    return f"""
        WITH scope AS MATERIALIZED (
            SELECT id, embedding FROM {table}
            WHERE {_SCOPE_WHERE}{_ABOUT_WHERE if about else ""} AND embedding IS NOT NULL
        ), nearest AS (
            SELECT id, embedding <=> %s::halfvec AS distance FROM scope ORDER BY distance LIMIT %s
        )
        {_ROWS}
    """


def _hnsw_sql(table: str, *, about: bool = False) -> str:
    return f"""
        WITH nearest AS MATERIALIZED (
            SELECT id, embedding <=> %s::halfvec AS distance FROM {table}
            WHERE {_SCOPE_WHERE}{_ABOUT_WHERE if about else ""}
            ORDER BY embedding <=> %s::halfvec LIMIT %s
        )
        {_ROWS}
    """


def scope_neighbours(
    *,
    tenant: Tenant,
    scope: Scope,
    embedding: np.ndarray,
    k: int,
    radius: float,
    exact: bool | None = None,
    about: str = "",
) -> list[Neighbour]:
    """Up to k active rows of the scope with cosine distance <= radius, nearest first; with `about`,
    only rows whose `metadata.about` is that person.

    `exact=None` picks the plan from the scope's size; True/False force one (tests, benchmarks).
    Runs in the caller's transaction (the store's), or in one of its own: SET LOCAL needs one.
    """
    if not connection.in_atomic_block:
        with transaction.atomic():
            return scope_neighbours(
                tenant=tenant, scope=scope, embedding=embedding, k=k, radius=radius, exact=exact, about=about
            )
    table = Memory._meta.db_table
    if exact is None:
        exact = scope_is_small(tenant=tenant, scope=scope)
    literal = vector_literal(embedding)
    scope_params: list[object] = [tenant.pk, scope.user_id, scope.namespace, scope.kind, MemoryStatus.ACTIVE]
    if about:
        scope_params.append(about)
    if exact:
        rows = fetch_all(_exact_sql(table, about=bool(about)), [*scope_params, literal, k, tenant.pk, radius])
    else:
        # SET LOCAL lasts until the end of the enclosing transaction (the store's), never longer.
        # Sent with the query in one round trip; the SELECT is the last result.
        ef_search = max(int(store_config().hnsw_ef_search), k)
        rows = fetch_all_with(
            hnsw_settings(ef_search=ef_search),
            _hnsw_sql(table, about=bool(about)),
            [literal, *scope_params, literal, k, tenant.pk, radius],
            isolate=False,
            using=DEFAULT_DB_ALIAS,
        )
    # No vectors come back: the judge needs each candidate's distance, which the query has, and a
    # merge copies the surviving text's vector inside the database (services.lineage_sql).
    return [Neighbour(memory_id=r[0], text=r[1], created_at=r[2], distance=float(r[3])) for r in rows]


def neighbour_origin(*, tenant: Tenant, neighbour: Neighbour) -> str:
    """Where a candidate's text comes from (its metadata["extracted_by"]; "" for one stored
    directly): a merge of an extracted fact with the message it came from keeps the fact's words."""
    row = (
        Memory.objects.filter(tenant=tenant, pk=neighbour.memory_id)
        .values_list("metadata__extracted_by", flat=True)
        .first()
    )
    return row or ""
