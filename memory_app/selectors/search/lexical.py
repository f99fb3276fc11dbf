"""BM25 over the stored tsvector, computed in PostgreSQL for one filtered scope.

Why not `ts_rank`: it has no inverse document frequency, so a question's common words (a person's
name that appears in half the scope) outweigh the rare word that identifies the answer. On LoCoMo
BM25 beats ts_rank_cd by a wide margin (docs/EVALUATION.md). The tsvector holds the memory text
with weight A and its `context` with weight B; a B occurrence counts `weight_b` of an A one
(BM25F-style field weighting), so a neighbouring turn can lend its words without outranking the
turn itself. Document length is the number of distinct lexemes (`length(tsvector)`), which
measured as good as counting positions and needs no unnest of non-matching rows.

Two plans, by the size of the scope:
- Up to SEARCH_EXACT_MAX_ROWS rows (the size up to which vector search is exact too) or
  SEARCH_BM25_TERM_CAP if larger (a B-tree count that stops there): one statement scores every row
  holding any query word. Document frequencies come from those rows (a row without any query word
  adds to no df), so no second pass over the scope is needed. Its cost grows with the scope (about
  40 ms for a word in all of 3,000 rows under load) but stays bounded, and the result is exact.
- Larger scopes: scoring every row that holds a word costs in proportion to how common the word is
  (a word in every row of a 100 k scope took 2.7 s). A word PostgreSQL's statistics put in at most
  `cap` rows of the whole table is rare in every scope; each other word's df is counted in the
  scope up to cap + 1, one small statement per word so the planner sees the word (a common one is
  found in the first rows of a scan, a rare one through the GIN index). Words held by at most `cap`
  rows select the rows to score, and their df comes from those rows as above; common words only
  add to the score of those rows, with their df from the scope statistics below.
  retrieval/bm25.py bounds what a row holding only common words could score: when the k-th scored
  row reaches that bound, the result is exactly the one statement's (with those statistics). When
  it does not, a filtered scope of up to SEARCH_EXACT_MAX_ROWS rows (the B-tree count is an upper
  bound: filters such as topics narrow it further) runs the one statement; a larger one also
  scores k more rows holding the rarest common word and no rarer one (whichever the scan meets
  first: among rows that hold only common words BM25 has little to say, and the vector half of a
  hybrid search ranks them), in the same statement, which starts that scan only when the bound is
  not reached (`_score_topped`).
  So the rows scored number at most (rare words x cap) + k, however common the words are.

The scope statistics (row count, average length and the df of common words) of a scope up to
SCOPE_SAMPLE_ROWS rows are exact; a larger scope's are estimated from its first SCOPE_SAMPLE_ROWS
rows (its row count is counted). Reading all of a 100 k scope took 155-170 ms; an estimated df
moves only a common word's small IDF. They move slowly (a few new rows change neither the count nor
the average length visibly), so for a scope of at least STATS_CACHE_MIN_ROWS rows they are
remembered per process for STATS_TTL seconds, with the words found rare or common there. A scope
of SMALL_STATS_MIN_ROWS up to that size remembers its row count and average length for
SMALL_STATS_TTL seconds (reading them was most of the statement for a user's 1,000 rows; 5 new
rows move either by 1 % or less, and the matched rows' dfs are still counted at every query).
Smaller scopes are counted at every query. A common word new to a remembered scope costs one read
of the sample, once per STATS_TTL.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memory_app.conf import search_config
from memory_app.db import (
    ElementFrequencies,
    count_up_to,
    element_frequencies,
    fetch_all,
    fetch_all_prepared,
    fetch_one,
)
from memory_app.models import Tenant
from memory_app.retrieval.bm25 import common_only_bound, common_words, top_is_exact, within_budget
from memory_app.selectors.search.candidates import MEMORY_TABLE, filter_sql, scope_rows
from memory_app.selectors.search.types import Candidate, SearchFilters

STATS_CACHE_MIN_ROWS = 10_000
STATS_TTL = 300.0
SMALL_STATS_MIN_ROWS = 500
SMALL_STATS_TTL = 60.0
_STATS_MAX = 4096
# Rows of a large scope its statistics are read from (`_scope_stats`): about 5 ms of reading,
# where the whole scope of 100 k rows took 155-170 ms, once per common word new to the process.
SCOPE_SAMPLE_ROWS = 5000
# A scope holding at least this share of the whole table takes a word's df from the table's
# statistics (ANALYZE's share of rows holding it, times the scope's rows) rather than counting it;
# a word they put in SURELY_COMMON x the cap's rows there is common without a count. A smaller
# scope (a user among many) may not share the table's words, and is counted as before.
TABLE_SCOPE_SHARE = 0.5
SURELY_COMMON = 4


@dataclass
class ScopeStats:
    read_at: float
    n: float
    avgdl: float
    dfs: dict[str, float] = field(default_factory=dict)  # common lexemes' document frequencies
    rare: dict[str, int] = field(default_factory=dict)  # lexemes counted in at most the cap's rows: df


_STATS: dict[str, ScopeStats] = {}  # scope key -> statistics
Row = tuple[Any, ...]

# Every statement scores its matched rows (id, sv, dl) the same way: each query lexeme's
# weighted occurrences per row, a B (context) occurrence counting `weight_b` (its parameter) of an A one.
# Each row's tsvector is first cut down to the query's lexemes, with their positions and weights:
# deleting the lexemes that remain once the query's are deleted. Unnesting whole tsvectors (each
# lexeme's arrays built, then all but the query's thrown away) cost 12 ms of a 17 ms statement for
# 985 matched rows at 10 k; the cut costs 3 ms, and the rows it yields are the same. A lexeme
# appears once in a tsvector, so each (row, lexeme) is one row of the cut: its weighted count is
# read off its weights array, with no unnest of the weights and no grouping (sorting 5,700 such
# rows to group them was a tenth of the statement at 100 k). The cut is unnested in the select
# list rather than in a LATERAL join, which builds a tuplestore per row: 1.05 rather than 1.25 ms
# for 425 rows of the 100 k peer scope.
_TERM_FREQUENCIES_OF = """{tf} AS (
            SELECT p.id, (p.u).lexeme, p.dl,
                   (cardinality((p.u).weights) - cardinality(array_positions((p.u).weights, 'B')))::float8
                   + cardinality(array_positions((p.u).weights, 'B')) * %s::float8 AS tf
            FROM (
                SELECT x.id, x.dl,
                       unnest(ts_delete(x.sv, tsvector_to_array(ts_delete(x.sv, terms.lexemes)))) AS u
                FROM {matched} x CROSS JOIN terms
            ) p
        )"""
_TERM_FREQUENCIES = _TERM_FREQUENCIES_OF.format(tf="tf", matched="matched") + ","
# A row's BM25 over its rows of `tf` (joined to `df`), with the scope's row count `n` and average
# length `avgdl`: parameters n, k1, k1, b, b, avgdl (n and avgdl columns instead where named).
_ROW_SCORE = """sum(ln(1 + ({n} - df.df + 0.5) / (df.df + 0.5))
                   * {tf}.tf * (%s + 1) / ({tf}.tf + %s * (1 - %s + %s * {tf}.dl / {avgdl})))"""


def _row_score(tf: str, *, n: str = "%s", avgdl: str = "%s") -> str:
    return _ROW_SCORE.format(tf=tf, n=n, avgdl=avgdl)


# The scored rows' dfs: counted in `tf` for the words that selected them, given for the others
# (parameters: the given words twice, then their dfs).
_GIVEN_AND_COUNTED_DFS = """df AS (
            SELECT lexeme, count(*)::float8 AS df FROM tf
            WHERE tf > 0 AND lexeme <> ALL(%s::text[]) GROUP BY lexeme
            UNION ALL
            SELECT * FROM unnest(%s::text[], %s::float8[])
        )"""
_MATCH_COLUMNS = "m.id, m.search_vector AS sv, length(m.search_vector)::float8 AS dl"
# The query's lexemes (parameter: the query), which every scoring statement opens with.
_TERMS = """WITH terms AS MATERIALIZED (
            SELECT tsvector_to_array(to_tsvector('english', %s)) AS lexemes
        ),"""

_COMPUTED_STATS = """
        stats AS MATERIALIZED (
            SELECT count(*)::float8 AS n, greatest(avg(length(m.search_vector)), 1)::float8 AS avgdl
            FROM {table} m WHERE {where}
        ),"""
_GIVEN_STATS = """
        stats AS (SELECT %s::float8 AS n, %s::float8 AS avgdl),"""


@dataclass(frozen=True)
class _Bm25:
    """One query's constants: the scope's WHERE clause and BM25's parameters."""

    where: str
    params: list[Any]
    k: int
    k1: float
    b: float
    weight_b: float
    tenant_id: int
    columns: tuple[str, ...] = ()  # SQL over alias `m`: read of each scored row, after its score


def _fetch_scored(q: _Bm25, sql: str, args: list[Any]) -> list[Row]:
    """A scoring statement's rows (id, score, ...), each followed by `q.columns` of its memory row:
    a search reads its BM25 candidates' rows in the statement that found them, not in a round trip
    of its own after it (the long pole of a 100 k search)."""
    if not q.columns:
        return fetch_all(sql, args)
    # The tenant as a value on the joined table: Citus then runs the join on the tenant's shard.
    wrapped = (
        f"SELECT r.*, {', '.join(q.columns)} FROM ({sql}) r "
        f"JOIN {MEMORY_TABLE} m ON m.tenant_id = %s AND m.id = r.id ORDER BY r.score DESC, r.id"
    )
    return fetch_all(wrapped, [*args, q.tenant_id])


def forget_scope_stats() -> None:
    _STATS.clear()


def _remembered(key: str) -> ScopeStats | None:
    cached = _STATS.get(key)
    if cached is None:
        return None
    ttl = STATS_TTL if cached.n >= STATS_CACHE_MIN_ROWS else SMALL_STATS_TTL
    if time.monotonic() - cached.read_at > ttl:
        return None
    return cached


def _remember(key: str, stats: ScopeStats) -> None:
    if stats.n < min(SMALL_STATS_MIN_ROWS, STATS_CACHE_MIN_ROWS):
        return
    if len(_STATS) >= _STATS_MAX and key not in _STATS:
        _STATS.clear()
    _STATS[key] = stats


def bm25_candidates(
    *,
    tenant: Tenant,
    filters: SearchFilters,
    query: str,
    k: int,
    k1: float = 1.2,
    b: float = 0.75,
    weight_b: float = 0.5,
    columns: Sequence[str] = (),
) -> list[Candidate]:
    """The k best rows of the scope by BM25 of the query's lexemes (any of them), best first; with
    `columns` (SQL over alias `m`), each candidate's `row` holds them, read by the same statement."""
    if k <= 0 or not query.strip():
        return []
    where, params = filter_sql(tenant=tenant, filters=filters)
    q = _Bm25(
        where=where,
        params=params,
        k=k,
        k1=k1,
        b=b,
        weight_b=weight_b,
        tenant_id=tenant.pk,
        columns=tuple(columns),
    )
    key = repr((where, params))
    cap = search_config().bm25_term_cap
    cached = _remembered(key)
    small = max(cap, search_config().exact_max_rows)
    if cached is not None and cached.n <= small:
        # A remembered scope of the small plan's size: its statistics, no count, no stats pass.
        return _candidates(q, _whole_match(q, query=query, key=key, cached=cached))
    counted = scope_rows(tenant=tenant, filters=filters, cap=small) if cached is None else None
    if counted == 0:  # an empty scope (a tenant without a knowledge base): nothing to score
        return []
    if counted is not None and counted <= small:
        rows = _whole_match(q, query=query, key=key, cached=None)
    else:
        rows = _capped(q, query=query, key=key, cap=cap, cached=cached)
    return _candidates(q, rows)


def _candidates(q: _Bm25, rows: list[Row]) -> list[Candidate]:
    """Candidates of scored rows, with their `q.columns` (the rows' last columns) where named."""
    read = len(q.columns)
    return [
        Candidate(memory_id=row[0], score=float(row[1]), plan="bm25", row=tuple(row[-read:]) if read else ())
        for row in rows
    ]


def _whole_match(q: _Bm25, *, query: str, key: str, cached: ScopeStats | None) -> list[Row]:
    """BM25 over every row holding any query word, in one statement (the small-scope plan)."""
    if cached is None:
        stats_sql = _COMPUTED_STATS.format(table=MEMORY_TABLE, where=q.where)
        stats_params: list[Any] = list(q.params)
    else:
        stats_sql, stats_params = _GIVEN_STATS, [cached.n, cached.avgdl]
    sql = f"""
        {_TERMS}
        q AS MATERIALIZED (
            SELECT replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery AS query
        ),
        matched AS MATERIALIZED (
            SELECT {_MATCH_COLUMNS} FROM {MEMORY_TABLE} m, q
            WHERE numnode(q.query) > 0 AND m.search_vector @@ q.query AND {q.where}
        ),
        {stats_sql}
        {_TERM_FREQUENCIES}
        df AS (SELECT lexeme, count(*)::float8 AS df FROM tf WHERE tf > 0 GROUP BY lexeme)
        SELECT tf.id, {_row_score("tf", n="s.n", avgdl="s.avgdl")} AS score, s.n, s.avgdl
        FROM tf JOIN df USING (lexeme) CROSS JOIN stats s
        WHERE tf.tf > 0
        GROUP BY tf.id, s.n, s.avgdl
        ORDER BY score DESC, tf.id
        LIMIT %s
    """
    args = [query, query, *q.params, *stats_params, q.weight_b, q.k1, q.k1, q.b, q.b, q.k]
    rows = _fetch_scored(q, sql, args)
    if cached is None and rows:
        _remember(key, ScopeStats(time.monotonic(), float(rows[0][2]), float(rows[0][3])))
    return rows


def _capped(q: _Bm25, *, query: str, key: str, cap: int, cached: ScopeStats | None) -> list[Row]:
    """BM25 where the words held by more than `cap` rows select no rows, nor do the rarer words
    past the row budget (the large-scope plan)."""
    quoted = _query_lexemes(query)
    common, counts = _common_lexemes(q, quoted=quoted, cap=cap, cached=cached)
    known = {**(cached.rare if cached is not None else {}), **{t: c for t, c in counts.items() if c <= cap}}
    rarer = {t: float(known.get(t, _table_estimate(t, cap=cap))) for t in quoted if t not in common}
    selecting = within_budget(rarer, budget=search_config().bm25_row_budget)
    demoted = [t for t in rarer if t not in selecting]
    if not common and not demoted:
        return _whole_match(q, query=query, key=key, cached=cached)
    stats = _scope_stats(q, key=key, quoted=quoted, common=common, cap=cap)
    stats.rare.update(known)
    # A demoted word's df: its count when one was made, else the table's bound of it (never below
    # the truth, so a word that selects no rows is never given more weight than it has).
    scoring_only = {**{t: stats.dfs[t] for t in common}, **{t: rarer[t] for t in demoted}}
    # rarest first: the word whose rows a bounded share is taken from below
    common_dfs = {t: scoring_only[t] for t in sorted(scoring_only, key=lambda t: (scoring_only[t], t))}
    words = _Words(stats, common_dfs, selecting, quoted)
    bound = common_only_bound(n=stats.n, common_dfs=list(common_dfs.values()), k1=q.k1)
    if stats.n > search_config().exact_max_rows:
        # Rows holding none of the selecting words could still rank: where the bound is not
        # reached, a bounded share of them is scored too, in the same statement.
        return _score_topped(q, query=query, words=words, bound=bound)
    rows = _score(q, query=query, words=words) if selecting else []
    if top_is_exact([float(r[1]) for r in rows], k=q.k, bound=bound):
        return rows
    return _whole_match(q, query=query, key=key, cached=None)


def _table_estimate(lexeme: str, *, cap: int) -> float:
    """About how many rows hold a lexeme no count was made of (the table's statistics put it in at
    most `cap` rows of the whole table, so it is at most that in the scope too)."""
    table = _table_frequencies()
    return float(cap) if table is None else min(table.rows_at_most(lexeme), float(cap))


def _query_lexemes(query: str) -> dict[str, str]:
    """The query's lexemes, each with its quoted tsquery text (prepared: one plan whatever the
    query)."""
    return dict(
        fetch_all_prepared(
            "SELECT l, array_to_tsvector(ARRAY[l])::text "
            "FROM unnest(tsvector_to_array(to_tsvector('english', %s::text))) l",
            [query],
        )
    )


def _common_lexemes(
    q: _Bm25, *, quoted: dict[str, str], cap: int, cached: ScopeStats | None
) -> tuple[list[str], dict[str, int]]:
    """The query's lexemes held by more than `cap` rows of the scope, in query order, and the
    counts (up to cap + 1) of those counted now."""
    table = _table_frequencies()
    maybe_common = [t for t in quoted if table is None or table.rows_at_most(t) > cap]
    # A large scope remembers which words it found common (with their df) and which rare.
    known = set() if cached is None else cached.dfs.keys() | cached.rare.keys()
    surely = _surely_common(table, cached, [t for t in maybe_common if t not in known], cap=cap)
    counts = _capped_dfs(
        q, quoted={t: quoted[t] for t in maybe_common if t not in known and t not in surely}, cap=cap
    )
    if cached is not None:
        cached.rare.update({t: c for t, c in counts.items() if c <= cap})
        cached.dfs.update(surely)
    found = common_words(counts, cap=cap)
    common = [t for t in maybe_common if t in found or (cached is not None and t in cached.dfs)]
    return common, counts


def _table_dfs(
    table: ElementFrequencies | None, stats: ScopeStats | None, words: list[str]
) -> dict[str, float]:
    """The dfs the table's statistics give `words` in a scope holding at least half of the table
    (where the table's shares are the scope's): those of the words ANALYZE listed. None counted."""
    if table is None or stats is None or stats.n < table.rows * TABLE_SCOPE_SHARE:
        return {}
    return {t: table.frequencies[t] * stats.n for t in words if t in table.frequencies}


def _surely_common(
    table: ElementFrequencies | None, stats: ScopeStats | None, words: list[str], *, cap: int
) -> dict[str, float]:
    """Of `words`, those the table's statistics put in SURELY_COMMON x the cap's rows of such a
    scope, or whose floor there (`_table_floor`) passes the cap, with the scope's share as df:
    common without a count (counting one up to the cap read cap + 1 rows)."""
    dfs = _table_dfs(table, stats, words)
    return {t: df for t, df in dfs.items() if df > SURELY_COMMON * cap or _table_floor(table, stats, t) > cap}


def _table_floor(table: ElementFrequencies | None, stats: ScopeStats | None, word: str) -> float:
    """The fewest rows of the scope that can hold `word`: its rows in the whole table (by the
    statistics) less every row of the table outside the scope. A scope holding nearly all of the
    table cannot hide a word's rows outside it, so a floor above the cap makes the word common
    without a count. ANALYZE reads a word's share off a sample (30,000 rows at the default
    statistics target: about 5 % off, one deviation, for a word in 1 % of them), so a floor just
    past the cap may belong to a word just below it: one the cap's own measure calls borderline,
    which selects rows or not to the same effect."""
    if table is None or stats is None or word not in table.frequencies:
        return 0.0
    return table.frequencies[word] * table.rows - max(table.rows - stats.n, 0.0)


_TABLE: list[tuple[float, ElementFrequencies | None]] = []  # (read at, what ANALYZE saw)


def _table_frequencies() -> ElementFrequencies | None:
    """The share of the whole table's rows holding each frequent lexeme, read now and then.

    A scope is part of the table, so a lexeme the statistics put in at most `cap` rows of the whole
    table is rare in every scope and needs no count; only the others are counted in the scope.
    None when the table was never analysed: every lexeme is then counted."""
    if not _TABLE or time.monotonic() - _TABLE[0][0] > STATS_TTL:
        _TABLE[:] = [(time.monotonic(), element_frequencies(table=MEMORY_TABLE, column="search_vector"))]
    return _TABLE[0][1]


def forget_table_frequencies() -> None:
    _TABLE.clear()


def _capped_dfs(q: _Bm25, *, quoted: dict[str, str], cap: int) -> dict[str, int]:
    """Each lexeme's document frequency in the scope, counted up to cap + 1.

    One sub-select per lexeme with the lexeme as a constant: the planner then reads a common word
    from the first rows of a scan and a rare one through the GIN index. With the lexeme as a
    run-time value it takes the GIN index for both, and reading a posting list of 100 k rows into a
    bitmap costs tens of milliseconds however soon the LIMIT is reached."""
    if not quoted:
        return {}
    parts, args = [], []
    for lexeme, text in quoted.items():
        parts.append(
            f"SELECT %s, (SELECT count(*) FROM (SELECT 1 FROM {MEMORY_TABLE} m "
            f"WHERE m.search_vector @@ %s::tsquery AND {q.where} LIMIT %s) s)"
        )
        args += [lexeme, text, *q.params, cap + 1]
    return {str(row[0]): int(row[1]) for row in fetch_all(" UNION ALL ".join(parts), args)}


def _scope_stats(q: _Bm25, *, key: str, quoted: dict[str, str], common: list[str], cap: int) -> ScopeStats:
    """Row count, average length and the common lexemes' dfs: remembered, or read now.

    Read from the scope's first SCOPE_SAMPLE_ROWS rows: exact for a scope that size or smaller, an
    estimate beyond (the row count is then counted on the scope's B-tree, the average length and
    the common words' shares taken from the sample). A common word's df changes only its small
    IDF, and it is known to exceed the cap, so its estimate never goes below cap + 1."""
    cached = _remembered(key)
    missing = [t for t in common if cached is None or t not in cached.dfs]
    if cached is not None:
        missing = _dfs_from_table(cached, missing, cap=cap)
        if not missing:
            return cached
    sampled, avgdl, hits = _read_sample(q, [quoted[t] for t in missing])
    if cached is not None:
        n, avgdl = cached.n, cached.avgdl
    elif sampled < SCOPE_SAMPLE_ROWS:
        n = sampled
    else:
        n = float(count_up_to(table=f"{MEMORY_TABLE} m", where=q.where, params=q.params, limit=10**12))
    share = n / sampled if sampled else 0.0
    estimates = [h if sampled < SCOPE_SAMPLE_ROWS else max(h * share, cap + 1.0) for h in hits]
    known = dict(cached.dfs) if cached is not None else {}
    known.update(zip(missing, estimates, strict=True))
    rare = dict(cached.rare) if cached is not None else {}
    read_at = cached.read_at if cached is not None else time.monotonic()
    stats = ScopeStats(read_at, n, avgdl, known, rare)
    _remember(key, stats)
    return stats


def _dfs_from_table(stats: ScopeStats, missing: list[str], *, cap: int) -> list[str]:
    """Set the dfs of `missing` common words that the table's statistics give (where they are the
    scope's: no read of the sample); the words still missing."""
    shared = _table_dfs(_table_frequencies(), stats, missing)
    stats.dfs.update({t: max(df, cap + 1.0) for t, df in shared.items()})
    return [t for t in missing if t not in shared]


def _read_sample(q: _Bm25, tsqueries: list[str]) -> tuple[float, float, list[float]]:
    """The scope's first SCOPE_SAMPLE_ROWS rows: how many, their average length, and how many of
    them match each tsquery."""
    counted = "".join(", count(*) FILTER (WHERE s.search_vector @@ %s::tsquery)::float8" for _ in tsqueries)
    row = fetch_one(
        f"SELECT count(*)::float8, greatest(avg(length(s.search_vector)), 1)::float8{counted} "
        f"FROM (SELECT m.search_vector FROM {MEMORY_TABLE} m WHERE {q.where} LIMIT %s) s",
        [*tsqueries, *q.params, SCOPE_SAMPLE_ROWS],
    )
    assert row is not None  # an aggregate without GROUP BY always returns its row
    return float(row[0]), float(row[1]), [float(v) for v in row[2:]]


@dataclass(frozen=True)
class _Words:
    """How a large scope's query words score: the scope's statistics, the dfs given for the words
    that select no rows (rarest first), the words that do, and each lexeme's tsquery text."""

    stats: ScopeStats
    given_dfs: dict[str, float]
    select: list[str]
    quoted: dict[str, str]

    def select_args(self) -> list[str]:
        """The selecting words' tsquery, for a statement that names it (none without them)."""
        return [" | ".join(self.quoted[t] for t in self.select)] if self.select else []

    def dfs_args(self) -> list[Any]:
        given = list(self.given_dfs)
        return [given, given, [self.given_dfs[t] for t in given]]

    def score_args(self, q: _Bm25) -> list[Any]:
        return [self.stats.n, q.k1, q.k1, q.b, q.b, self.stats.avgdl]


def _selected_sql(q: _Bm25, words: _Words) -> str:
    """`matched`, `tf`, `df` and `top`: the k best rows holding a selecting word (none without
    one), scored on every query word: the selecting words' dfs counted in those rows (every row
    holding one is there), the other words' given. Parameters: `_selected_args`."""
    holding = "m.search_vector @@ %s::tsquery" if words.select else "false"
    return f"""{_TERMS}
        matched AS MATERIALIZED (
            SELECT {_MATCH_COLUMNS} FROM {MEMORY_TABLE} m WHERE {holding} AND {q.where}
        ),
        {_TERM_FREQUENCIES}
        {_GIVEN_AND_COUNTED_DFS},
        top AS MATERIALIZED (
            SELECT tf.id, {_row_score("tf")} AS score
            FROM tf JOIN df USING (lexeme)
            WHERE tf.tf > 0
            GROUP BY tf.id
            ORDER BY score DESC, tf.id
            LIMIT %s
        )"""


def _selected_args(q: _Bm25, words: _Words, *, query: str) -> list[Any]:
    return [query, *words.select_args(), *q.params, q.weight_b, *words.dfs_args(), *words.score_args(q), q.k]


def _score(q: _Bm25, *, query: str, words: _Words) -> list[Row]:
    """The k best rows holding a selecting word, best first."""
    sql = f"{_selected_sql(q, words)}\n        SELECT id, score FROM top ORDER BY score DESC, id"
    return _fetch_scored(q, sql, _selected_args(q, words, query=query))


def _score_topped(q: _Bm25, *, query: str, words: _Words, bound: float) -> list[Row]:
    """The k best rows of the scope, in one statement: those holding a selecting word, as `_score`
    scores them, and, only when the k-th of them scores below `bound` (or there are fewer than k),
    also at most k rows holding the rarest of the other words and no selecting word (whichever the
    scan meets first).

    The second scan runs in most searches of a large scope (the bound is loose), and as a
    statement of its own it cost a round trip, a plan and a parse of k rows (0.7 ms of PostgreSQL's
    CPU a search in the 100 k peer scope). The rows it adds hold no selecting word, so they change
    no df counted in the first rows; they score below `bound`, so where the first rows reach it
    they could not have entered the top k anyway."""
    without = "NOT (m.search_vector @@ %s::tsquery) AND " if words.select else ""
    sql = f"""{_selected_sql(q, words)},
        below AS MATERIALIZED (
            SELECT {_MATCH_COLUMNS} FROM {MEMORY_TABLE} m
            WHERE (SELECT count(*) < %s OR min(score) < %s FROM top)
              AND {without}m.search_vector @@ %s::tsquery AND {q.where}
            LIMIT %s
        ),
        {_TERM_FREQUENCIES_OF.format(tf="below_tf", matched="below")}
        SELECT id, score FROM top
        UNION ALL
        SELECT below_tf.id, {_row_score("below_tf")}
        FROM below_tf JOIN df USING (lexeme)
        WHERE below_tf.tf > 0
        GROUP BY below_tf.id
        ORDER BY 2 DESC, 1
        LIMIT %s
    """
    rarest = words.quoted[next(iter(words.given_dfs))]
    args = [
        *_selected_args(q, words, query=query),
        q.k,
        bound,
        *words.select_args(),
        rarest,
        *q.params,
        q.k,
        q.weight_b,
        *words.score_args(q),
        q.k,
    ]
    return _fetch_scored(q, sql, args)
