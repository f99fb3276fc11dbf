"""BM25 over the stored tsvector, computed in PostgreSQL for one filtered scope.

Why not `ts_rank`: it has no inverse document frequency, so a question's common words (a person's
name that appears in half the scope) outweigh the rare word that identifies the answer. On LoCoMo
BM25 beats ts_rank_cd by a wide margin (docs/EVALUATION.md). The tsvector holds the memory text
with weight A and its `context` with weight B; a B occurrence counts `weight_b` of an A one
(BM25F-style field weighting), so a neighbouring turn can lend its words without outranking the
turn itself.

Document frequencies come from the rows that match the OR-query: a row without any query lexeme
contributes nothing to any term's df, so no second pass over the scope is needed; only the scope
size and average length (one aggregate over the B-tree-selected scope) are read besides.
Document length is the number of distinct lexemes (`length(tsvector)`), which measured as good as
counting positions and needs no unnest of non-matching rows.

The scope statistics read every row of the scope (each tsvector's length): negligible for a user's
few hundred memories, the largest part of the query for a scope of 100 k. They move slowly (a few
new rows change neither the count nor the average length visibly), so for a scope of at least
STATS_CACHE_MIN_ROWS rows they are remembered per process for STATS_TTL seconds and passed in;
smaller scopes are counted at every query, exactly as before.
"""

from __future__ import annotations

import time

from memory_app.db import fetch_all
from memory_app.models import Tenant
from memory_app.selectors.candidates import MEMORY_TABLE, filter_sql
from memory_app.selectors.search_types import Candidate, SearchFilters

STATS_CACHE_MIN_ROWS = 10_000
STATS_TTL = 300.0
_STATS: dict[str, tuple[float, float, float]] = {}  # scope key -> (read at, n, avgdl)
_STATS_MAX = 4096

_COMPUTED_STATS = """
        stats AS MATERIALIZED (
            SELECT count(*)::float8 AS n, greatest(avg(length(m.search_vector)), 1)::float8 AS avgdl
            FROM {table} m WHERE {where}
        ),"""
_GIVEN_STATS = """
        stats AS (SELECT %s::float8 AS n, %s::float8 AS avgdl),"""


def forget_scope_stats() -> None:
    _STATS.clear()


def bm25_candidates(
    *,
    tenant: Tenant,
    filters: SearchFilters,
    query: str,
    k: int,
    k1: float = 1.2,
    b: float = 0.75,
    weight_b: float = 0.5,
) -> list[Candidate]:
    """The k best rows of the scope by BM25 of the query's lexemes (any of them), best first."""
    if k <= 0 or not query.strip():
        return []
    where, params = filter_sql(tenant=tenant, filters=filters)
    key = repr((where, params))
    cached = _STATS.get(key)
    if cached is not None and time.monotonic() - cached[0] > STATS_TTL:
        cached = None
    if cached is None:
        stats_sql, stats_params = _COMPUTED_STATS.format(table=MEMORY_TABLE, where=where), list(params)
    else:
        stats_sql, stats_params = _GIVEN_STATS, [cached[1], cached[2]]
    sql = f"""
        WITH terms AS MATERIALIZED (
            SELECT tsvector_to_array(to_tsvector('english', %s)) AS lexemes
        ),
        q AS MATERIALIZED (
            SELECT replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery AS query
        ),
        matched AS MATERIALIZED (
            SELECT m.id, m.search_vector AS sv, length(m.search_vector)::float8 AS dl FROM {MEMORY_TABLE} m, q
            WHERE numnode(q.query) > 0 AND m.search_vector @@ q.query AND {where}
        ),
        {stats_sql}
        tf AS (
            SELECT x.id, u.lexeme, x.dl,
                   sum(CASE w WHEN 'A' THEN 1.0 WHEN 'B' THEN %s ELSE 1.0 END)::float8 AS tf
            FROM matched x
            CROSS JOIN terms
            CROSS JOIN LATERAL unnest(x.sv) u
            CROSS JOIN LATERAL unnest(u.weights) w
            WHERE u.lexeme = ANY(terms.lexemes)
            GROUP BY x.id, u.lexeme, x.dl
        ),
        df AS (SELECT lexeme, count(*)::float8 AS df FROM tf WHERE tf > 0 GROUP BY lexeme)
        SELECT tf.id,
               sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
                   * tf.tf * (%s + 1) / (tf.tf + %s * (1 - %s + %s * tf.dl / s.avgdl))) AS score,
               s.n, s.avgdl
        FROM tf JOIN df USING (lexeme) CROSS JOIN stats s
        WHERE tf.tf > 0
        GROUP BY tf.id, s.n, s.avgdl
        ORDER BY score DESC, tf.id
        LIMIT %s
    """
    args = [query, query, *params, *stats_params, weight_b, k1, k1, b, b, k]
    rows = fetch_all(sql, args)
    if cached is None and rows and rows[0][2] >= STATS_CACHE_MIN_ROWS:
        if len(_STATS) >= _STATS_MAX:
            _STATS.clear()
        _STATS[key] = (time.monotonic(), float(rows[0][2]), float(rows[0][3]))
    return [Candidate(memory_id=row[0], score=float(row[1]), plan="bm25") for row in rows]
