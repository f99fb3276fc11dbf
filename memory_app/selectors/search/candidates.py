"""SQL candidate generation for search: nearest rows by vector, matching rows by full text.

Both generators apply every `SearchFilters` field, the tenant, the status rule (deleted never,
superseded only when asked) and the embedding model (vectors of different models never mix).
Ranking (fusion, decay, dedup, MMR) is the caller's business; these return ids, a score and the
plan that found each row.

Vector plans, chosen by the size of the scope (`scope_plan`):
- "exact" (scopes up to SEARCH_EXACT_MAX_ROWS, counted through the B-tree, capped): the scope's
  rows are selected through B-tree indexes and ordered by exact cosine distance. The `+ 0` on the
  distance hides it from the HNSW index's ordering, so neither a generic plan nor a join can make
  the planner swap in an approximate scan that loses rows.
- "partial_index": the scope (a user or a namespace) has its own partial HNSW index, made by
  `services/maintenance/search_indexes.py`; same query shape as below with SEARCH_PARTIAL_EF_SEARCH.
- "hnsw_iterative": the shared HNSW index with `hnsw.iterative_scan = relaxed_order` and
  SEARCH_HNSW_EF_SEARCH, set with SET LOCAL in the transaction that runs the query; the
  over-fetched rows are re-ranked by exact distance.
- "exact_fallback": an HNSW plan returned fewer than k rows (a selective filter stopped the scan
  at hnsw.max_scan_tuples): the exact plan runs, so no filter returns fewer rows than exist.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from memory_app.conf import search_config
from memory_app.db import (
    LargeScopes,
    MidScopes,
    count_up_to,
    fetch_all,
    fetch_all_with,
    hnsw_settings,
    vector_literal,
)
from memory_app.embeddings import embedding_model_name
from memory_app.models import SearchScopeIndex, Tenant
from memory_app.selectors.search.types import Candidate, SearchFilters

MEMORY_TABLE = "memory_app_memory"
Match = Literal["all", "any"]


def filter_sql(*, tenant: Tenant, filters: SearchFilters, alias: str = "m") -> tuple[str, list[Any]]:
    """The WHERE clause shared by every candidate query: tenant, scope, status and all filters."""
    a = alias
    clauses = [f"{a}.tenant_id = %s"]
    params: list[Any] = [tenant.pk]
    for field in ("user_id", "agent_id", "namespace", "session_id", "kind"):
        value = getattr(filters, field)
        if value is not None:
            clauses.append(f"{a}.{field} = %s")
            params.append(value)
    if filters.include_superseded:
        clauses.append(f"{a}.status IN ('active', 'superseded')")
    else:
        clauses.append(f"{a}.status = 'active'")
    # Expired rows the sweep has not reached yet are already gone as far as readers are concerned.
    clauses.append(f"({a}.expires_at IS NULL OR {a}.expires_at > now() OR {a}.pinned)")
    if filters.topics_any:
        clauses.append(f"{a}.topics && %s::varchar(100)[]")
        params.append(list(filters.topics_any))
    if filters.topics_all:
        clauses.append(f"{a}.topics @> %s::varchar(100)[]")
        params.append(list(filters.topics_all))
    if filters.entities:
        # Any of the named entities: a question about "Alice or Bob" should find either.
        clauses.append(f"{a}.entities && %s::varchar(200)[]")
        params.append(list(filters.entities))
    for bound, column, op in (
        ("created_after", "created_at", ">="),
        ("created_before", "created_at", "<"),
        ("event_after", "event_date", ">="),
        ("event_before", "event_date", "<"),
    ):
        value = getattr(filters, bound)
        if value is not None:
            clauses.append(f"{a}.{column} {op} %s")
            params.append(value)
    if filters.min_confidence is not None:
        clauses.append(f"{a}.confidence >= %s")
        params.append(filters.min_confidence)
    return " AND ".join(clauses), params


@dataclass(frozen=True)
class ScopePlan:
    """How a vector query will run: the plan, the scope size it was chosen on and hnsw.ef_search."""

    plan: str  # "exact" | "partial_index" | "hnsw_iterative"
    scope_rows: int | None  # counted rows, capped at SEARCH_EXACT_MAX_ROWS + 1; None when not counted
    ef_search: int | None = None


_INDEXED_SCOPES: dict[int, tuple[float, frozenset[tuple[str, str]]]] = {}
_INDEXED_SCOPES_TTL = 30.0  # seconds: a new partial index is picked up within this delay


def indexed_scopes(*, tenant: Tenant) -> frozenset[tuple[str, str]]:
    """(field, value) of the tenant's scopes that have a partial HNSW index, cached briefly."""
    now = time.monotonic()
    cached = _INDEXED_SCOPES.get(tenant.pk)
    if cached is not None and now - cached[0] < _INDEXED_SCOPES_TTL:
        return cached[1]
    scopes = frozenset(SearchScopeIndex.objects.filter(tenant=tenant).values_list("field", "value"))
    _INDEXED_SCOPES[tenant.pk] = (now, scopes)
    return scopes


def forget_indexed_scopes() -> None:
    _INDEXED_SCOPES.clear()


# Scope counts already made in this search (`one_count_per_scope`): (rows counted, cap) per scope.
_COUNTED: ContextVar[dict[tuple[Any, ...], tuple[int, int]] | None] = ContextVar("scope_counts", default=None)


@contextmanager
def one_count_per_scope() -> Iterator[None]:
    """Within the block, a scope is counted once: BM25's plan and the vector plan of one search
    both ask for it, a statement each (a write landing between the two counts could as well have
    landed just before the first)."""
    token = _COUNTED.set({})
    try:
        yield
    finally:
        _COUNTED.reset(token)


def scope_rows(*, tenant: Tenant, filters: SearchFilters, cap: int) -> int:
    """Rows in the scope's B-tree prefix (tenant, user, namespace, kind, status), counted up to cap + 1.

    An upper bound of the filtered scope read from the index alone (an index-only scan of
    memory_scope_idx or memory_namespace_scope_idx), so it costs well under a millisecond even when
    the scope is huge: the count stops at cap + 1.
    """
    memo = _COUNTED.get()
    key = (tenant.pk, filters.user_id, filters.namespace, filters.kind, filters.include_superseded)
    if memo is not None and key in memo:
        rows, counted_to = memo[key]
        if rows <= counted_to:  # an exact count answers any cap
            return min(rows, cap + 1)
        if cap <= counted_to:  # more than counted_to rows: more than cap too
            return cap + 1
    remembered = _MID_SCOPES.get(key)
    if remembered is not None and remembered <= cap:
        return remembered
    rows = _count_scope(tenant=tenant, filters=filters, cap=cap)
    if memo is not None:
        memo[key] = (rows, cap)
    _MID_SCOPES.add(key, rows=rows, cap=cap)
    return rows


def _count_scope(*, tenant: Tenant, filters: SearchFilters, cap: int) -> int:
    clauses = ["tenant_id = %s"]
    params: list[Any] = [tenant.pk]
    for field in ("user_id", "namespace", "kind"):
        value = getattr(filters, field)
        if value is not None:
            clauses.append(f"{field} = %s")
            params.append(value)
    statuses = "('active', 'superseded')" if filters.include_superseded else "('active')"
    clauses.append(f"status IN {statuses}")
    return count_up_to(table=MEMORY_TABLE, where=" AND ".join(clauses), params=params, limit=cap + 1)


# A scope counted over the exact plan's cap is not counted again for 30 s (db.LargeScopes):
# counting up to the cap costs ~2 ms a search at 5,000 rows. Nor is one of 200 rows up to half the
# cap (db.MidScopes): a user's 1,000 memories cost ~1 ms a count, once or twice a search.
_LARGE_SCOPES = LargeScopes(ttl=30.0, max_entries=4096)
_MID_SCOPES = MidScopes(ttl=30.0, floor=200, max_entries=4096)


def forget_large_scopes() -> None:
    _LARGE_SCOPES.clear()
    _MID_SCOPES.clear()


def scope_plan(*, tenant: Tenant, filters: SearchFilters) -> ScopePlan:
    """Pick the vector plan by scope size: exact for small scopes, HNSW for large ones."""
    indexed = indexed_scopes(tenant=tenant)
    if ("user_id", filters.user_id) in indexed or ("namespace", filters.namespace) in indexed:
        return ScopePlan("partial_index", None, search_config().partial_ef_search)
    cap = search_config().exact_max_rows
    key = (tenant.pk, filters.user_id, filters.namespace, filters.kind, filters.include_superseded, cap)
    if key in _LARGE_SCOPES:
        return ScopePlan("hnsw_iterative", None, search_config().hnsw_ef_search)
    rows = scope_rows(tenant=tenant, filters=filters, cap=cap)
    if rows <= cap:
        return ScopePlan("exact", rows)
    _LARGE_SCOPES.add(key)
    return ScopePlan("hnsw_iterative", rows, search_config().hnsw_ef_search)


Statement = tuple[str, list[Any], dict[str, str]]  # SQL, parameters, SET LOCAL values


def _exact_statement(*, where: str, params: list[Any], vector: str, k: int) -> Statement:
    # `+ 0` hides the distance from the HNSW index's ordering: this plan is exact by construction.
    sql = (
        f"SELECT m.id, (m.embedding <=> %s::halfvec) + 0 AS distance FROM {MEMORY_TABLE} m "
        f"WHERE {where} ORDER BY distance, m.id LIMIT %s"
    )
    return sql, [vector, *params, k], {}


def _hnsw_statement(*, where: str, params: list[Any], vector: str, k: int, ef_search: int) -> Statement:
    """Approximate neighbours through an HNSW index (shared or partial), re-ranked by exact distance.

    The inner query keeps the index's shape (ascending `<=>`, LIMIT); relaxed_order may return
    rows slightly out of order, so the outer query sorts the over-fetched rows by their exact
    distance and keeps k.
    """
    fetch = max(k, ef_search)
    sql = (
        f"WITH nn AS MATERIALIZED (SELECT m.id, m.embedding <=> %s::halfvec AS distance "
        f"FROM {MEMORY_TABLE} m WHERE {where} ORDER BY m.embedding <=> %s::halfvec LIMIT %s) "
        "SELECT id, distance FROM nn ORDER BY distance, id LIMIT %s"
    )
    local = hnsw_settings(ef_search=ef_search, max_scan_tuples=search_config().hnsw_max_scan_tuples)
    return sql, [vector, *params, vector, fetch, k], local


def _run(statement: Statement, *, explain: bool = False) -> list[tuple[Any, ...]]:
    sql, params, local = statement
    if explain:
        sql = "EXPLAIN (COSTS OFF) " + sql
    if not local:
        return fetch_all(sql, params)
    # Inside a caller's transaction the settings are rolled back afterwards (only reads happen
    # here), so they never leak into the caller's later queries.
    return fetch_all_with(local, sql, params)


def _statement(
    *, tenant: Tenant, filters: SearchFilters, query_embedding: np.ndarray, k: int, plan: str | None
) -> tuple[str, Statement, Statement]:
    """The chosen plan's name, its statement and the exact statement (its fallback)."""
    try:
        vector = vector_literal(query_embedding)
    except ValueError:
        raise ValueError("query_embedding must be a non-empty finite vector") from None
    where, params = filter_sql(tenant=tenant, filters=filters)
    where += " AND m.embedding_model = %s AND m.embedding IS NOT NULL"
    params.append(embedding_model_name(tenant))
    chosen = scope_plan(tenant=tenant, filters=filters) if plan is None else ScopePlan(plan, None)
    exact = _exact_statement(where=where, params=params, vector=vector, k=k)
    if chosen.plan == "exact":
        # A scope counted empty (a tenant without a knowledge base) has no candidate to look for.
        return ("empty" if chosen.scope_rows == 0 else "exact"), exact, exact
    if chosen.plan not in ("partial_index", "hnsw_iterative"):
        raise ValueError(f"unknown plan {chosen.plan!r}")
    ef_search = chosen.ef_search or (
        search_config().partial_ef_search
        if chosen.plan == "partial_index"
        else search_config().hnsw_ef_search
    )
    hnsw = _hnsw_statement(where=where, params=params, vector=vector, k=k, ef_search=ef_search)
    return chosen.plan, hnsw, exact


def vector_candidates(
    *, tenant: Tenant, filters: SearchFilters, query_embedding: np.ndarray, k: int, plan: str | None = None
) -> list[Candidate]:
    """The k rows of the filtered scope nearest to the query (cosine distance, ascending).

    Small scopes are searched exactly; large ones through HNSW (a partial index of their own when
    `search_indexes_sync` made one), falling back to exact when the index yields fewer than k rows,
    so no filter returns fewer rows than exist. `plan` forces a plan (tests, benchmarks).
    """
    name, rows = vector_candidate_rows(
        tenant=tenant, filters=filters, query_embedding=query_embedding, k=k, plan=plan
    )
    return [Candidate(memory_id=row[0], score=float(row[1]), plan=name) for row in rows]


def vector_candidate_rows(
    *,
    tenant: Tenant,
    filters: SearchFilters,
    query_embedding: np.ndarray,
    k: int,
    plan: str | None = None,
    columns: Sequence[str] = (),
) -> tuple[str, list[tuple[Any, ...]]]:
    """vector_candidates' plan and rows (id, distance); with `columns` (SQL over alias `m`), rows
    (id, distance, *columns): a search reads its candidates' rows in the same statement rather
    than in a second one."""
    if k <= 0:
        return "empty", []
    name, statement, exact = _statement(
        tenant=tenant, filters=filters, query_embedding=query_embedding, k=k, plan=plan
    )
    if name == "empty":
        return name, []
    if columns:
        same = statement is exact
        exact = _with_columns(exact, columns, tenant=tenant)
        statement = exact if same else _with_columns(statement, columns, tenant=tenant)
    rows = _run(statement)
    if len(rows) < k and statement is not exact:
        # The scan stopped at max_scan_tuples under a selective filter, or the scope is smaller
        # than k: exact finds every row there is.
        name, rows = "exact_fallback", _run(exact)
    return name, rows


def _with_columns(statement: Statement, columns: Sequence[str], *, tenant: Tenant) -> Statement:
    sql, params, local = statement
    # The tenant as a value on the joined table too: Citus then runs the join on the tenant's shard.
    wrapped = (
        f"SELECT c.id, c.distance, {', '.join(columns)} FROM ({sql}) c "
        f"JOIN {MEMORY_TABLE} m ON m.tenant_id = %s AND m.id = c.id ORDER BY c.distance, c.id"
    )
    return wrapped, [*params, tenant.pk], local


def explain_vector_candidates(
    *, tenant: Tenant, filters: SearchFilters, query_embedding: np.ndarray, k: int, plan: str | None = None
) -> str:
    """PostgreSQL's plan for the query vector_candidates would run (which index serves it)."""
    _name, statement, _exact = _statement(
        tenant=tenant, filters=filters, query_embedding=query_embedding, k=k, plan=plan
    )
    return "\n".join(row[0] for row in _run(statement, explain=True))


def _tsquery_sql(match: Match) -> str:
    if match == "all":
        return "websearch_to_tsquery('english', %s)"
    # Natural-language questions rarely contain every term of the answer: OR the lexemes of the
    # plain query (already stemmed and quoted, so the text cast re-reads them as they are).
    return "replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery"


def fulltext_candidates(
    *,
    tenant: Tenant,
    filters: SearchFilters,
    query: str,
    k: int,
    match: Match = "any",
    columns: Sequence[str] = (),
) -> list[Candidate]:
    """Rows whose text matches the query, best ts_rank_cd first. Stop-word-only queries match
    nothing. With `columns` (SQL over alias `m`), each candidate's `row` holds them."""
    if k <= 0 or not query.strip():
        return []
    if match not in ("all", "any"):
        raise ValueError("match must be 'all' or 'any'")
    where, params = filter_sql(tenant=tenant, filters=filters)
    extra = "".join(f", {column}" for column in columns)
    sql = (
        f"WITH q AS (SELECT {_tsquery_sql(match)} AS query) "
        f"SELECT m.id, ts_rank_cd(m.search_vector, q.query) AS rank{extra} FROM {MEMORY_TABLE} m, q "
        f"WHERE numnode(q.query) > 0 AND m.search_vector @@ q.query AND {where} "
        "ORDER BY rank DESC, m.id LIMIT %s"
    )
    rows = fetch_all(sql, [query, *params, k])
    return [
        Candidate(memory_id=row[0], score=float(row[1]), plan="fulltext", row=tuple(row[2:])) for row in rows
    ]
