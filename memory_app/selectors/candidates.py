"""SQL candidate generation for search: nearest rows by vector, matching rows by full text.

Both generators apply every `SearchFilters` field, the tenant, the status rule (deleted never,
superseded only when asked) and the embedding model (vectors of different models never mix).
Ranking (fusion, decay, dedup, MMR) is the caller's business; these return ids, a score and the
plan that found each row.

Vector plans, chosen by the size of the scope (see `scope_plan`):
- "exact": the scope's rows are selected through B-tree indexes and ordered by exact cosine
  distance. The `+ 0` on the distance hides it from the HNSW index's ordering, so neither a
  generic plan nor a join can make the planner swap in an approximate scan that loses rows.
- "hnsw_iterative": the shared HNSW index with `hnsw.iterative_scan = relaxed_order` and a tuned
  `hnsw.ef_search`, set with SET LOCAL in the transaction that runs the query; the over-fetched
  rows are re-ranked by exact distance. If the scan returns fewer than k rows, "exact" runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from django.db import connection

from memory_app.embeddings import embedding_model_name
from memory_app.models import Tenant
from memory_app.selectors.search_types import Candidate, SearchFilters

MEMORY_TABLE = "memory_app_memory"
Match = Literal["all", "any"]


def _vector_literal(vector: np.ndarray | Sequence[float]) -> str:
    values = np.asarray(vector, dtype=np.float32).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError("query_embedding must be a non-empty finite vector")
    return "[" + ",".join(map(str, values.tolist())) + "]"


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


def _exact(*, tenant: Tenant, filters: SearchFilters, vector: str, model: str, k: int) -> list[Candidate]:
    where, params = filter_sql(tenant=tenant, filters=filters)
    sql = (
        f"SELECT m.id, (m.embedding <=> %s::vector) + 0 AS distance FROM {MEMORY_TABLE} m "
        f"WHERE {where} AND m.embedding_model = %s AND m.embedding IS NOT NULL "
        "ORDER BY distance, m.id LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [vector, *params, model, k])
        rows = cursor.fetchall()
    return [Candidate(memory_id=row[0], score=float(row[1]), plan="exact") for row in rows]


def vector_candidates(
    *, tenant: Tenant, filters: SearchFilters, query_embedding: np.ndarray, k: int
) -> list[Candidate]:
    """The k rows of the filtered scope nearest to the query (cosine distance, ascending)."""
    if k <= 0:
        return []
    vector = _vector_literal(query_embedding)
    model = embedding_model_name()
    return _exact(tenant=tenant, filters=filters, vector=vector, model=model, k=k)


def _tsquery_sql(match: Match) -> str:
    if match == "all":
        return "websearch_to_tsquery('english', %s)"
    # Natural-language questions rarely contain every term of the answer: OR the lexemes of the
    # plain query (already stemmed and quoted, so the text cast re-reads them as they are).
    return "replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery"


def fulltext_candidates(
    *, tenant: Tenant, filters: SearchFilters, query: str, k: int, match: Match = "any"
) -> list[Candidate]:
    """Rows whose text matches the query, best ts_rank_cd first. Stop-word-only queries match nothing."""
    if k <= 0 or not query.strip():
        return []
    if match not in ("all", "any"):
        raise ValueError("match must be 'all' or 'any'")
    where, params = filter_sql(tenant=tenant, filters=filters)
    sql = (
        f"WITH q AS (SELECT {_tsquery_sql(match)} AS query) "
        f"SELECT m.id, ts_rank_cd(m.search_vector, q.query) AS rank FROM {MEMORY_TABLE} m, q "
        f"WHERE numnode(q.query) > 0 AND m.search_vector @@ q.query AND {where} "
        "ORDER BY rank DESC, m.id LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [query, *params, k])
        rows = cursor.fetchall()
    return [Candidate(memory_id=row[0], score=float(row[1]), plan="fulltext") for row in rows]
