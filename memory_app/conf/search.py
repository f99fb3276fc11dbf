"""Search, the context endpoint and query-time windows: SearchConfig, ContextConfig, QueryTimeConfig."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from memory_app.conf.declare import knob
from project.env import choice, flag, integer, number, optional_number


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """Search: candidate plans and HNSW settings, ranking, load-time dedup, clustering, MMR."""

    # Candidate generation (selectors/search/candidates.py; docs/PERFORMANCE.md for how these were set).
    exact_max_rows: int = knob(
        integer(
            "SEARCH_EXACT_MAX_ROWS",
            5000,
            0,
            100_000_000,
            "scopes up to this many rows are searched exactly (B-tree + exact distance)",
        )
    )
    hnsw_ef_search: int = knob(
        integer(
            "SEARCH_HNSW_EF_SEARCH",
            200,
            10,
            1000,
            "`hnsw.ef_search` on the shared HNSW index (filtered, iterative scan, re-ranked)",
        )
    )
    partial_ef_search: int = knob(
        integer(
            "SEARCH_PARTIAL_EF_SEARCH", 200, 10, 1000, "`hnsw.ef_search` on a scope's own partial HNSW index"
        )
    )
    hnsw_max_scan_tuples: int = knob(
        integer(
            "SEARCH_HNSW_MAX_SCAN_TUPLES",
            20000,
            100,
            10_000_000,
            "tuples an iterative scan may visit before the exact fallback",
        )
    )
    # Per-scope partial HNSW indexes (services/maintenance/search_indexes.py).
    partial_index_min_rows: int = knob(
        integer(
            "SEARCH_PARTIAL_INDEX_MIN_ROWS",
            10000,
            100,
            100_000_000,
            "a user or namespace this large gets its own partial HNSW index (`manage.py search_indexes`)",
        )
    )
    partial_index_max_fraction: float = knob(
        number(
            "SEARCH_PARTIAL_INDEX_MAX_FRACTION",
            0.5,
            0.0,
            1.0,
            "...unless it holds more than this share of the table (the shared index serves so loose a "
            "filter well)",
        )
    )
    index_build_memory_mb: int = knob(
        integer(
            "SEARCH_INDEX_BUILD_MEMORY_MB",
            512,
            64,
            65536,
            "`maintenance_work_mem` of a partial index build (100 k rows need ~200 MB to build fast)",
        )
    )
    # Ranking.
    fusion: str = knob(
        choice(
            "SEARCH_FUSION",
            "weighted",
            ("weighted", "rrf"),
            "hybrid fusion: `weighted` (cosine + BM25 / max BM25) or `rrf` (reciprocal rank fusion)",
        )
    )
    vector_weight: float = knob(
        number("SEARCH_VECTOR_WEIGHT", 0.5, 0.0, 1.0, "weight of the vector side in either fusion")
    )
    rrf_k: float = knob(number("SEARCH_RRF_K", 60.0, 1.0, 1000.0, "RRF constant (with `SEARCH_FUSION=rrf`)"))
    # 50 rather than 100: the same LoCoMo 0-4 recall (docs/EVALUATION.md), and in a 100 k scope BM25,
    # the slower half of a hybrid search, scores fewer rows (docs/PERFORMANCE.md, against mem0).
    candidates: int = knob(
        integer(
            "SEARCH_CANDIDATES",
            50,
            10,
            10_000,
            "rows each candidate generator returns before fusion (at least the fetch size below)",
        )
    )
    fetch_margin: int = knob(
        integer(
            "SEARCH_FETCH_MARGIN",
            60,
            0,
            10_000,
            "with load-time dedup on, a search reads `limit + min(2 x limit, this)` rows for dedup, "
            "clustering and MMR to fill in from (`/context/all`'s 60 hits read 120 rows, not 180)",
        )
    )
    lexical: str = knob(
        choice(
            "SEARCH_LEXICAL",
            "bm25",
            ("bm25", "ts_rank"),
            "full-text ranking: `bm25` (in SQL, with IDF) or PostgreSQL's `ts_rank` (`ts_rank_cd`)",
        )
    )
    bm25_k1: float = knob(number("SEARCH_BM25_K1", 1.2, 0.0, 10.0, "BM25 term-frequency saturation"))
    bm25_b: float = knob(number("SEARCH_BM25_B", 0.75, 0.0, 1.0, "BM25 length normalisation"))
    # Above this many rows of a scope, a query word held by more rows selects none
    # (selectors/search/lexical.py).
    bm25_term_cap: int = knob(
        integer(
            "SEARCH_BM25_TERM_CAP",
            1000,
            10,
            100_000_000,
            "in a scope over `SEARCH_EXACT_MAX_ROWS` rows (or this, if larger), a query word held by "
            "more rows than this adds to BM25 scores but selects no candidates",
        )
    )
    bm25_row_budget: int = knob(
        integer(
            "SEARCH_BM25_ROW_BUDGET",
            1000,
            1,
            100_000_000,
            "in the same large scopes, the rarest query words select rows while their rows add up to "
            "at most this many (the rarest always does); the others only add to the selected rows' scores",
        )
    )
    # selectors/search/beside.py: BM25 on a connection of its own while the query is embedded and
    # its vector query runs.
    lexical_threads: int = knob(
        integer(
            "SEARCH_LEXICAL_THREADS",
            2,
            0,
            64,
            "threads per process that run a hybrid search's full-text half beside its vector half, "
            "each with its own database connection (`0`: one after the other on the request's own)",
        )
    )
    context_weight: float = knob(
        number(
            "SEARCH_CONTEXT_WEIGHT",
            0.5,
            0.0,
            1.0,
            "a word of a memory's `context` (tsvector weight B) counts this much of a word of its text",
        )
    )
    decay_half_life_days: float = knob(
        number("SEARCH_DECAY_HALF_LIFE_DAYS", 180.0, 0.0, 1e6, "temporal decay on a memory's age (0 = off)")
    )
    decay_floor: float = knob(
        number("SEARCH_DECAY_FLOOR", 0.5, 0.0, 1.0, "decay never multiplies a score by less than this")
    )
    ace_confidence_weight: float = knob(
        number(
            "SEARCH_ACE_CONFIDENCE_WEIGHT",
            0.2,
            0.0,
            2.0,
            "w_c of the ACE multiplier 1 + w_c (confidence - 0.5) + w_f tanh((helpful - harmful) / 3)",
        )
    )
    ace_feedback_weight: float = knob(
        number("SEARCH_ACE_FEEDBACK_WEIGHT", 0.1, 0.0, 2.0, "w_f of the ACE multiplier")
    )
    # Load-time dedup, clustering and MMR (each may be overridden per agent profile).
    dedup_enabled: bool = knob(
        flag("SEARCH_DEDUP_ENABLED", True, "load-time dedup of search results (per request `deduplicate`)")
    )
    # None: the calibration's candidate radius.
    dedup_threshold: float | None = knob(
        optional_number(
            "SEARCH_DEDUP_THRESHOLD",
            0.0,
            2.0,
            "cosine distance within which results are proposed to the judge as duplicates",
            default_doc="per model (`0.4` for MiniLM)",
        )
    )
    dedup_use_llm: bool = knob(
        flag(
            "SEARCH_DEDUP_USE_LLM",
            False,
            "verify load-time groups with the LLM judge (falls back to offline)",
        )
    )
    clustering_enabled: bool = knob(
        flag(
            "SEARCH_CLUSTERING_ENABLED",
            True,
            "DBSCAN labels on results (`cluster` field) and the cluster log line",
        )
    )
    dbscan_epsilon: float = knob(
        number("SEARCH_DBSCAN_EPSILON", 0.15, 0.0, 2.0, "DBSCAN's radius, in cosine distance")
    )
    dbscan_min_points: int = knob(
        integer("SEARCH_DBSCAN_MIN_POINTS", 2, 1, 1000, "DBSCAN's fewest points of a cluster")
    )
    mmr_enabled: bool = knob(flag("SEARCH_MMR_ENABLED", False, "maximal marginal relevance re-ordering"))
    mmr_lambda: float = knob(
        number("SEARCH_MMR_LAMBDA", 0.7, 0.0, 1.0, "MMR's weight of relevance against diversity")
    )


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """POST /context (one kind, scored) and POST /context/all (every kind, shared budget)."""

    similarity_weight: float = knob(
        number(
            "CONTEXT_SIMILARITY_WEIGHT",
            0.6,
            0.0,
            1.0,
            "`POST /context` ranks facts by similarity x this + confidence x `CONTEXT_CONFIDENCE_WEIGHT`",
        )
    )
    confidence_weight: float = knob(
        number("CONTEXT_CONFIDENCE_WEIGHT", 0.4, 0.0, 1.0, "the confidence weight of that ranking")
    )
    max_tokens: int = knob(
        integer("CONTEXT_MAX_TOKENS", 1000, 1, 1_000_000, "default token budget of `POST /context`")
    )
    candidates: int = knob(
        integer("CONTEXT_CANDIDATES", 200, 1, 10_000, "facts considered by `POST /context`")
    )
    relevance_floor: float = knob(
        number(
            "CONTEXT_RELEVANCE_FLOOR",
            0.15,
            0.0,
            1.0,
            "`/context` and `/context/all` inject no memory whose relevance to the query (weighted "
            "cosine + BM25, absolute) is below this; calibrated on LoCoMo 0-4 (docs/EVALUATION.md); "
            "`0` turns it off",
        )
    )
    all_max_tokens: int = knob(
        integer(
            "CONTEXT_ALL_MAX_TOKENS",
            2000,
            1,
            1_000_000,
            "default token budget of `POST /context/all` (its `max_tokens`)",
        )
    )
    # Each part's first share of /context/all's budget; what a part leaves unused flows to the others
    # (selectors/context/turn.py). Normalised to sum to 1.
    share_short_term: float = knob(
        number(
            "CONTEXT_ALL_SHARE_SHORT_TERM",
            0.3,
            0.0,
            1.0,
            "short-term's first share of that budget (the shares are normalised); what a part leaves "
            "unused goes to the others",
        )
    )
    share_episodic: float = knob(
        number("CONTEXT_ALL_SHARE_EPISODIC", 0.45, 0.0, 1.0, "episodic's first share of that budget")
    )
    share_semantic: float = knob(
        number("CONTEXT_ALL_SHARE_SEMANTIC", 0.15, 0.0, 1.0, "semantic's first share of that budget")
    )
    share_procedural: float = knob(
        number("CONTEXT_ALL_SHARE_PROCEDURAL", 0.1, 0.0, 1.0, "procedural's first share of that budget")
    )
    all_candidates: int = knob(
        integer(
            "CONTEXT_ALL_CANDIDATES",
            60,
            1,
            1000,
            "most memories per part `/context/all` considers (fewer for a small budget)",
        )
    )

    @property
    def all_shares(self) -> Mapping[str, float]:
        """Each part's first share of /context/all's budget, by part name (read-only)."""
        return MappingProxyType(
            {
                "short_term": self.share_short_term,
                "episodic": self.share_episodic,
                "semantic": self.share_semantic,
                "procedural": self.share_procedural,
            }
        )


@dataclass(frozen=True, slots=True)
class QueryTimeConfig:
    """Time expressions in search and context queries (selectors/search/time_window.py)."""

    mode: str = knob(
        choice(
            "SEARCH_QUERY_TIME",
            "boost",
            ("boost", "filter", "off"),
            'a time expression in a search or context query ("yesterday", "last week", "in May") names '
            "a window of event dates, read against the request's `now` (default: the server's time): "
            "`boost` the memories dated in it, `filter` to them, or `off`; per request `query_time`; "
            "the response's `time_window` says what applied",
        )
    )
    boost: float = knob(
        number(
            "SEARCH_QUERY_TIME_BOOST",
            1.0,
            0.0,
            10.0,
            "a memory dated in that window scores (1 + this) times as much",
        )
    )
