"""The service's tuning knobs: each declared once, on a field of its domain's frozen object.

A field's declaration (project/env.py `Setting`) is the knob's one definition: environment variable,
type, default, allowed values, one line of documentation, the docs table that lists it. From it
`project/settings.py` parses the environment strictly at start-up (`settings_from_env`: a bad value
stops the process naming the variable), each `<domain>_config()` builds its object from
`django.conf.settings`, and `manage.py settings_doc --write` writes the README's and
docs/OPERATIONS.md's tables (tests/project/test_settings_declared.py fails on drift).

Each `<domain>_config()` builds its object on first use and then hands out the same object.
Changing a setting at run time through Django's own mechanism (`override_settings`, pytest-django's
`settings` fixture) sends `setting_changed`, and the receiver below drops every cached object, so
the next call sees the new value; nothing else changes them.

Django's own and the infrastructure's variables (DEBUG, SECRET_KEY, the database, Celery, the API's
request limits, health-check timeouts) are declared in project/variables.py and read from
`django.conf.settings` where they are used: they configure the frameworks, not the memory service.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from project.env import OPERATIONS, Setting, choice, flag, integer, number, optional_number, text

__all__ = [
    "DECLARED",
    "ContextConfig",
    "EmbeddingsConfig",
    "JudgeConfig",
    "KindsConfig",
    "LLMConfig",
    "MaintenanceConfig",
    "OpenAIEmbeddingConfig",
    "QueryTimeConfig",
    "QuotaConfig",
    "SearchConfig",
    "StoreConfig",
    "context_config",
    "embeddings_config",
    "judge_config",
    "kinds_config",
    "llm_config",
    "maintenance_config",
    "query_time_config",
    "quota_config",
    "search_config",
    "settings_from_env",
    "store_config",
]

_T = TypeVar("_T")
_cache_clears: list[Callable[[], None]] = []
_OPS = {"table": OPERATIONS}


def _knob(setting: Setting[Any]) -> Any:
    """A config field declared by its setting (read back by `_build` and `DECLARED`)."""
    return dataclasses.field(metadata={"setting": setting})


def _nested(cls: type[Any]) -> Any:
    """A config field holding another config object, built from that one's declared fields."""
    return dataclasses.field(metadata={"nested": cls})


def _build(cls: type[_T]) -> _T:
    """The object of `cls` from `django.conf.settings`: each field from its declared setting, a
    nested config object from its own fields."""
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        nested = field.metadata.get("nested")
        values[field.name] = _build(nested) if nested else getattr(settings, field.metadata["setting"].name)
    return cls(**values)


def _read_once(build: Callable[[], _T]) -> Callable[[], _T]:
    cached = cache(build)
    _cache_clears.append(cached.cache_clear)
    return cached


@receiver(setting_changed)
def _settings_changed(**kwargs: object) -> None:
    """Drop every cached config object: the next read rebuilds it from the changed settings."""
    for clear in _cache_clears:
        clear()


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """The write path: validation limits, store-time dedup, new-memory defaults, feedback."""

    dedup_enabled: bool = _knob(
        flag(
            "STORE_DEDUP_ENABLED",
            True,
            "semantic dedup on store (an agent profile's `deduplicate` or `?deduplicate=` overrides; "
            "identical text is always returned as `duplicate_of`: identical up to case, compatibility "
            "forms, whitespace, quote style and trailing punctuation, never across a digit, sign, "
            "symbol, emoji or letter)",
        )
    )
    candidates_k: int = _knob(
        integer(
            "STORE_CANDIDATES_K",
            5,
            1,
            50,
            "nearest neighbours within the radius handed to the judge per new memory",
        )
    )
    exact_scope_max: int = _knob(
        integer(
            "STORE_EXACT_SCOPE_MAX",
            2000,
            0,
            10_000_000,
            "scopes up to this many active rows are searched exactly (B-tree + exact distance); larger "
            "ones through HNSW",
        )
    )
    hnsw_ef_search: int = _knob(
        integer(
            "STORE_HNSW_EF_SEARCH",
            80,
            10,
            1000,
            "`hnsw.ef_search` for store candidates in large scopes (iterative scan, relaxed order)",
        )
    )
    max_batch: int = _knob(
        integer("STORE_MAX_BATCH", 100, 1, 10_000, "most memories in one `POST /api/v1/memories` list")
    )
    max_text_chars: int = _knob(
        integer("MEMORY_MAX_TEXT_CHARS", 8000, 100, 1_000_000, "longest memory text accepted")
    )
    default_confidence: float = _knob(
        number("MEMORY_DEFAULT_CONFIDENCE", 0.5, 0.0, 1.0, "confidence of a new memory when none is given")
    )
    feedback_step: float = _knob(
        number(
            "MEMORY_FEEDBACK_STEP",
            0.1,
            0.0,
            1.0,
            "feedback moves confidence this fraction of the way to 1 (helpful) or 0 (harmful)",
        )
    )
    # A memory's free-form `metadata` is copied into lineage snapshots and returned with every
    # result: bounded on every write path (REST, MCP, import, interactions).
    metadata_max_bytes: int = _knob(
        integer(
            "MEMORY_METADATA_MAX_BYTES",
            16384,
            256,
            1_048_576,
            "largest `metadata` as JSON (UTF-8 bytes); more is a 400 naming the limit, on every write path",
        )
    )
    metadata_max_depth: int = _knob(
        integer("MEMORY_METADATA_MAX_DEPTH", 32, 1, 64, "deepest nesting of `metadata`")
    )
    metadata_max_keys: int = _knob(
        integer("MEMORY_METADATA_MAX_KEYS", 256, 1, 100_000, "most keys of `metadata` (all levels together)")
    )
    metadata_max_key_chars: int = _knob(
        integer("MEMORY_METADATA_MAX_KEY_CHARS", 128, 1, 10_000, "longest key of `metadata`")
    )
    # Reads' access counts are written by a background thread this often; 0: at once (store/access.py).
    access_flush_seconds: float = _knob(
        number(
            "MEMORY_ACCESS_FLUSH_SECONDS",
            1.0,
            0.0,
            300.0,
            "a read's access counts (`access_count`, `last_accessed_at`) are added up per process and "
            "written by a background thread this often, one statement per tenant; counts not yet "
            "written are lost if the process is killed; `0` writes them with each read",
        )
    )


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """The relation judge: which one, and overrides of the calibration file's two thresholds."""

    judge: str = _knob(
        choice(
            "DEDUP_JUDGE",
            "offline",
            ("offline", "llm"),
            "default relation judge for store-time dedup: `offline` or `llm` (falls back to offline on "
            "any failure)",
        )
    )
    # None: the value fitted per embedding model in judge/calibration/<model>.json.
    candidate_radius: float | None = _knob(
        optional_number(
            "DEDUP_CANDIDATE_RADIUS",
            0.0,
            2.0,
            "cosine-distance radius for dedup candidates",
            default_doc="from `memory_app/judge/calibration/<model>.json`",
        )
    )
    review_below: float | None = _knob(
        optional_number(
            "DEDUP_REVIEW_BELOW",
            0.0,
            1.0,
            "a merge/supersede less confident than this is queued for review",
            default_doc="from the calibration file",
        )
    )
    llm_timeout_seconds: float = _knob(
        number(
            "DEDUP_LLM_TIMEOUT_SECONDS",
            20.0,
            1.0,
            300.0,
            "timeout of the LLM judge's one call per new memory (on timeout the offline judge answers)",
        )
    )


# Both the LLM's client and the remote embedding provider's.
_OPENAI_API_KEY = text(
    "OPENAI_API_KEY",
    "",
    "required with `EMBEDDING_PROVIDER=openai` or an LLM (the LLM judge needs none when "
    "`OPENAI_BASE_URL` points to a local server)",
)
_OPENAI_BASE_URL = text(
    "OPENAI_BASE_URL", "", "any OpenAI-compatible server", default_doc="empty (api.openai.com)"
)


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """The OpenAI-compatible chat model used by the LLM judge, extraction and session summaries."""

    model: str = _knob(
        text(
            "LLM_MODEL",
            "",
            "chat model for the LLM judge, extraction and summaries",
            default_doc="empty (no LLM)",
        )
    )
    api_key: str = _knob(_OPENAI_API_KEY)
    base_url: str = _knob(_OPENAI_BASE_URL)
    timeout_seconds: float = _knob(
        number("OPENAI_TIMEOUT_SECONDS", 30.0, 1.0, 600.0, "per request (LLM calls)")
    )

    @property
    def configured(self) -> bool:
        """A model and a key: the features that need an LLM are offered."""
        return bool(self.model and self.api_key)


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """Search: candidate plans and HNSW settings, ranking, load-time dedup, clustering, MMR."""

    # Candidate generation (selectors/search/candidates.py; docs/PERFORMANCE.md for how these were set).
    exact_max_rows: int = _knob(
        integer(
            "SEARCH_EXACT_MAX_ROWS",
            5000,
            0,
            100_000_000,
            "scopes up to this many rows are searched exactly (B-tree + exact distance)",
        )
    )
    hnsw_ef_search: int = _knob(
        integer(
            "SEARCH_HNSW_EF_SEARCH",
            200,
            10,
            1000,
            "`hnsw.ef_search` on the shared HNSW index (filtered, iterative scan, re-ranked)",
        )
    )
    partial_ef_search: int = _knob(
        integer(
            "SEARCH_PARTIAL_EF_SEARCH", 200, 10, 1000, "`hnsw.ef_search` on a scope's own partial HNSW index"
        )
    )
    hnsw_max_scan_tuples: int = _knob(
        integer(
            "SEARCH_HNSW_MAX_SCAN_TUPLES",
            20000,
            100,
            10_000_000,
            "tuples an iterative scan may visit before the exact fallback",
        )
    )
    # Per-scope partial HNSW indexes (services/maintenance/search_indexes.py).
    partial_index_min_rows: int = _knob(
        integer(
            "SEARCH_PARTIAL_INDEX_MIN_ROWS",
            10000,
            100,
            100_000_000,
            "a user or namespace this large gets its own partial HNSW index (`manage.py search_indexes`)",
        )
    )
    partial_index_max_fraction: float = _knob(
        number(
            "SEARCH_PARTIAL_INDEX_MAX_FRACTION",
            0.5,
            0.0,
            1.0,
            "...unless it holds more than this share of the table (the shared index serves so loose a "
            "filter well)",
        )
    )
    index_build_memory_mb: int = _knob(
        integer(
            "SEARCH_INDEX_BUILD_MEMORY_MB",
            512,
            64,
            65536,
            "`maintenance_work_mem` of a partial index build (100 k rows need ~200 MB to build fast)",
        )
    )
    # Ranking.
    fusion: str = _knob(
        choice(
            "SEARCH_FUSION",
            "weighted",
            ("weighted", "rrf"),
            "hybrid fusion: `weighted` (cosine + BM25 / max BM25) or `rrf` (reciprocal rank fusion)",
        )
    )
    vector_weight: float = _knob(
        number("SEARCH_VECTOR_WEIGHT", 0.5, 0.0, 1.0, "weight of the vector side in either fusion")
    )
    rrf_k: float = _knob(number("SEARCH_RRF_K", 60.0, 1.0, 1000.0, "RRF constant (with `SEARCH_FUSION=rrf`)"))
    candidates: int = _knob(
        integer(
            "SEARCH_CANDIDATES",
            100,
            10,
            10_000,
            "rows each candidate generator returns before fusion (at least the fetch size below)",
        )
    )
    fetch_margin: int = _knob(
        integer(
            "SEARCH_FETCH_MARGIN",
            60,
            0,
            10_000,
            "with load-time dedup on, a search reads `limit + min(2 x limit, this)` rows for dedup, "
            "clustering and MMR to fill in from (`/context/all`'s 60 hits read 120 rows, not 180)",
        )
    )
    lexical: str = _knob(
        choice(
            "SEARCH_LEXICAL",
            "bm25",
            ("bm25", "ts_rank"),
            "full-text ranking: `bm25` (in SQL, with IDF) or PostgreSQL's `ts_rank` (`ts_rank_cd`)",
        )
    )
    bm25_k1: float = _knob(number("SEARCH_BM25_K1", 1.2, 0.0, 10.0, "BM25 term-frequency saturation"))
    bm25_b: float = _knob(number("SEARCH_BM25_B", 0.75, 0.0, 1.0, "BM25 length normalisation"))
    # Above this many rows of a scope, a query word held by more rows selects none
    # (selectors/search/lexical.py).
    bm25_term_cap: int = _knob(
        integer(
            "SEARCH_BM25_TERM_CAP",
            1000,
            10,
            100_000_000,
            "in a scope over `SEARCH_EXACT_MAX_ROWS` rows (or this, if larger), a query word held by "
            "more rows than this adds to BM25 scores but selects no candidates",
        )
    )
    context_weight: float = _knob(
        number(
            "SEARCH_CONTEXT_WEIGHT",
            0.5,
            0.0,
            1.0,
            "a word of a memory's `context` (tsvector weight B) counts this much of a word of its text",
        )
    )
    decay_half_life_days: float = _knob(
        number("SEARCH_DECAY_HALF_LIFE_DAYS", 180.0, 0.0, 1e6, "temporal decay on a memory's age (0 = off)")
    )
    decay_floor: float = _knob(
        number("SEARCH_DECAY_FLOOR", 0.5, 0.0, 1.0, "decay never multiplies a score by less than this")
    )
    ace_confidence_weight: float = _knob(
        number(
            "SEARCH_ACE_CONFIDENCE_WEIGHT",
            0.2,
            0.0,
            2.0,
            "w_c of the ACE multiplier 1 + w_c (confidence - 0.5) + w_f tanh((helpful - harmful) / 3)",
        )
    )
    ace_feedback_weight: float = _knob(
        number("SEARCH_ACE_FEEDBACK_WEIGHT", 0.1, 0.0, 2.0, "w_f of the ACE multiplier")
    )
    # Load-time dedup, clustering and MMR (each may be overridden per agent profile).
    dedup_enabled: bool = _knob(
        flag("SEARCH_DEDUP_ENABLED", True, "load-time dedup of search results (per request `deduplicate`)")
    )
    # None: the calibration's candidate radius.
    dedup_threshold: float | None = _knob(
        optional_number(
            "SEARCH_DEDUP_THRESHOLD",
            0.0,
            2.0,
            "cosine distance within which results are proposed to the judge as duplicates",
            default_doc="per model (`0.4` for MiniLM)",
        )
    )
    dedup_use_llm: bool = _knob(
        flag(
            "SEARCH_DEDUP_USE_LLM",
            False,
            "verify load-time groups with the LLM judge (falls back to offline)",
        )
    )
    clustering_enabled: bool = _knob(
        flag(
            "SEARCH_CLUSTERING_ENABLED",
            True,
            "DBSCAN labels on results (`cluster` field) and the cluster log line",
        )
    )
    dbscan_epsilon: float = _knob(
        number("SEARCH_DBSCAN_EPSILON", 0.15, 0.0, 2.0, "DBSCAN's radius, in cosine distance")
    )
    dbscan_min_points: int = _knob(
        integer("SEARCH_DBSCAN_MIN_POINTS", 2, 1, 1000, "DBSCAN's fewest points of a cluster")
    )
    mmr_enabled: bool = _knob(flag("SEARCH_MMR_ENABLED", False, "maximal marginal relevance re-ordering"))
    mmr_lambda: float = _knob(
        number("SEARCH_MMR_LAMBDA", 0.7, 0.0, 1.0, "MMR's weight of relevance against diversity")
    )


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """POST /context (one kind, scored) and POST /context/all (every kind, shared budget)."""

    similarity_weight: float = _knob(
        number(
            "CONTEXT_SIMILARITY_WEIGHT",
            0.6,
            0.0,
            1.0,
            "`POST /context` ranks facts by similarity x this + confidence x `CONTEXT_CONFIDENCE_WEIGHT`",
        )
    )
    confidence_weight: float = _knob(
        number("CONTEXT_CONFIDENCE_WEIGHT", 0.4, 0.0, 1.0, "the confidence weight of that ranking")
    )
    max_tokens: int = _knob(
        integer("CONTEXT_MAX_TOKENS", 1000, 1, 1_000_000, "default token budget of `POST /context`")
    )
    candidates: int = _knob(
        integer("CONTEXT_CANDIDATES", 200, 1, 10_000, "facts considered by `POST /context`")
    )
    relevance_floor: float = _knob(
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
    all_max_tokens: int = _knob(
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
    share_short_term: float = _knob(
        number(
            "CONTEXT_ALL_SHARE_SHORT_TERM",
            0.3,
            0.0,
            1.0,
            "short-term's first share of that budget (the shares are normalised); what a part leaves "
            "unused goes to the others",
        )
    )
    share_episodic: float = _knob(
        number("CONTEXT_ALL_SHARE_EPISODIC", 0.45, 0.0, 1.0, "episodic's first share of that budget")
    )
    share_semantic: float = _knob(
        number("CONTEXT_ALL_SHARE_SEMANTIC", 0.15, 0.0, 1.0, "semantic's first share of that budget")
    )
    share_procedural: float = _knob(
        number("CONTEXT_ALL_SHARE_PROCEDURAL", 0.1, 0.0, 1.0, "procedural's first share of that budget")
    )
    all_candidates: int = _knob(
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
class OpenAIEmbeddingConfig:
    """The remote provider's client and batching (hashable: the provider cache's key)."""

    api_key: str = _knob(_OPENAI_API_KEY)
    base_url: str = _knob(_OPENAI_BASE_URL)
    timeout_seconds: float = _knob(
        number(
            "OPENAI_EMBEDDING_TIMEOUT_SECONDS",
            5.0,
            0.1,
            600.0,
            "per embeddings request: embeddings are on the request path, so a silent provider fails fast",
        )
    )
    batch_size: int = _knob(
        integer(
            "OPENAI_EMBEDDING_BATCH_SIZE", 2048, 1, 2048, "inputs per embeddings request (the API's limit)"
        )
    )
    max_tokens_per_request: int = _knob(
        integer(
            "OPENAI_EMBEDDING_MAX_TOKENS_PER_REQUEST",
            300_000,
            8192,
            300_000,
            "token cap per embeddings request",
        )
    )
    max_retries: int = _knob(
        integer(
            "OPENAI_EMBEDDING_MAX_RETRIES",
            2,
            0,
            10,
            "retries of 429, 5xx, timeouts (the SDK's own retries are off)",
        )
    )
    backoff_seconds: float = _knob(
        number(
            "OPENAI_EMBEDDING_BACKOFF_SECONDS", 0.5, 0.0, 60.0, "base of those retries' exponential backoff"
        )
    )


@dataclass(frozen=True, slots=True)
class EmbeddingsConfig:
    """Providers, the embedding cache and its near-duplicate tier, the breaker, the statistics."""

    provider: str = _knob(
        choice(
            "EMBEDDING_PROVIDER",
            "local",
            ("local", "openai"),
            "`local` (a sentence-transformers model on the CPU, all-MiniLM-L6-v2 by default) or `openai`",
        )
    )
    model: str = _knob(
        text(
            "EMBEDDING_MODEL",
            "all-MiniLM-L6-v2",
            "model name, stored with every vector; for `local` also a directory of a saved "
            "sentence-transformers model or an installed model package (offline; a width other than "
            "the vector columns' 384 needs `reindex --apply --resize`). A change takes effect through "
            "`manage.py reindex --apply`, which running processes follow without a restart "
            '(docs/OPERATIONS.md, "Reindexing")',
            default_doc="`all-MiniLM-L6-v2` / `text-embedding-3-small`",
        )
    )
    openai: OpenAIEmbeddingConfig = _nested(OpenAIEmbeddingConfig)  # noqa: RUF009 (a field spec, like _knob)
    cache_enabled: bool = _knob(
        flag(
            "EMBEDDING_CACHE_ENABLED",
            True,
            "the embedding cache (exact hash, normalised hash, near duplicate), private per tenant",
        )
    )
    # The local model embeds the texts of concurrent requests of one process in one forward pass
    # (embeddings/batching.py, bench/load.py).
    local_batching: bool = _knob(
        flag(
            "EMBEDDING_LOCAL_BATCHING",
            True,
            "the local model embeds the texts of concurrent requests of one process in one forward pass",
        )
    )
    local_batch_wait_ms: float = _knob(
        number("EMBEDDING_LOCAL_BATCH_WAIT_MS", 2.0, 0.0, 100.0, "how long a text waits for company")
    )
    local_max_batch: int = _knob(
        integer("EMBEDDING_LOCAL_MAX_BATCH", 32, 1, 1024, "the largest shared batch")
    )
    # 1 by default: with two threads, any other busy process on the cores makes torch's threads wait
    # on each other (one short text took 240-520 ms instead of 13 ms on a 2-core machine at load 2).
    torch_threads: int = _knob(
        integer(
            "EMBEDDING_TORCH_THREADS",
            1,
            0,
            256,
            "threads of the local model's pass per process (torch or ONNX Runtime) (`0`: torch's "
            "default, every core); more than one pays only on a machine with cores to spare",
        )
    )
    local_runtime: str = _knob(
        choice(
            "EMBEDDING_LOCAL_RUNTIME",
            "onnx",
            ("onnx", "torch"),
            "what runs the local model's pass: `onnx` (ONNX Runtime, ~2.5x less CPU per short text, same "
            "vectors to ~1e-7; falls back to torch if it cannot start) or `torch`",
        )
    )
    onnx_dir: str = _knob(
        text(
            "EMBEDDING_ONNX_DIR",
            "var/models",
            "where the ONNX file exported from the installed weights is kept (written once, under a "
            "file lock; relative to the checkout)",
        )
    )
    breaker_failures: int = _knob(
        integer(
            "EMBEDDING_BREAKER_FAILURES",
            1,
            1,
            1000,
            "after this many failed provider calls in a row (each after its retries), the provider is "
            "not called for `EMBEDDING_BREAKER_SECONDS`: searches answer from full text and stores "
            "answer `embedding_pending` at once",
        )
    )
    breaker_seconds: float = _knob(
        number("EMBEDDING_BREAKER_SECONDS", 30.0, 0.0, 3600.0, "how long an open breaker stays open")
    )
    near_dup: str = _knob(
        choice(
            "EMBEDDING_NEAR_DUP",
            "auto",
            ("auto", "on", "off"),
            "near-duplicate reuse: `auto` (on for a remote provider only), `on`, `off`",
        )
    )
    near_dup_threshold: float = _knob(
        number(
            "SEMANTIC_DEDUP_THRESHOLD",
            0.99,
            0.90,
            0.999,
            "similarity at which a cached near-identical text's embedding is reused; see "
            'docs/ARCHITECTURE.md "Embeddings"',
        )
    )
    # ...and the order-aware surface guard beside it (MiniLM alone reuses across swapped words).
    near_dup_surface_min: float = _knob(
        number(
            "EMBEDDING_NEAR_DUP_SURFACE_MIN",
            0.95,
            0.5,
            1.0,
            "and the order-aware surface-sketch similarity a near duplicate also needs",
        )
    )
    near_dup_ef_search: int = _knob(
        integer("EMBEDDING_NEAR_DUP_EF_SEARCH", 40, 1, 1000, "`hnsw.ef_search` of the near-duplicate lookup")
    )
    price_per_1k_tokens: float = _knob(
        number(
            "EMBEDDING_PRICE_PER_1K_TOKENS",
            0.00002,
            0.0,
            100.0,
            'price used for "estimated cost saved" (text-embedding-3-small)',
            default_doc="`0.00002`",
        )
    )
    stats_flush_seconds: float = _knob(
        number(
            "EMBEDDING_STATS_FLUSH_SECONDS", 5.0, 0.0, 3600.0, "cache counters are written at most this often"
        )
    )
    stats_log_every: int = _knob(
        integer("EMBEDDING_STATS_LOG_EVERY", 1000, 1, 10**9, "a summary line is logged every N texts")
    )


@dataclass(frozen=True, slots=True)
class MaintenanceConfig:
    """Background work: compaction, maintenance jobs, periodic schedules, expiry and retention."""

    compaction_radius: float = _knob(
        number(
            "COMPACTION_RADIUS",
            0.45,
            0.01,
            1.0,
            "cosine-distance radius of compaction candidates; tighter than the store path's, because it "
            'is applied to every pair of a whole scope ("Compaction")',
            **_OPS,
        )
    )
    compaction_judge: str = _knob(
        choice(
            "COMPACTION_JUDGE",
            "offline",
            ("offline", "llm"),
            "relation judge of compaction: `offline` or `llm`",
            **_OPS,
        )
    )
    compaction_exact_max_rows: int = _knob(
        integer(
            "COMPACTION_EXACT_MAX_ROWS",
            5_000,
            2,
            10_000_000,
            "scopes up to this size compare every pair; larger ones use inverted lists (bench/compaction.py)",
            **_OPS,
        )
    )
    compaction_blas_threads: int = _knob(
        integer(
            "COMPACTION_BLAS_THREADS",
            1,
            0,
            256,
            "BLAS threads per compaction process (`0`: all cores); 1 suits workers that share the machine",
            **_OPS,
        )
    )
    compaction_max_group_size: int = _knob(
        integer("COMPACTION_MAX_GROUP_SIZE", 20, 2, 1000, "largest group compaction resolves at once", **_OPS)
    )
    job_heartbeat_seconds: int = _knob(
        integer(
            "MAINTENANCE_JOB_HEARTBEAT_SECONDS",
            15,
            1,
            3600,
            "a running maintenance job writes a heartbeat this often (from a thread) and after every scope",
            **_OPS,
        )
    )
    job_stale_seconds: int = _knob(
        integer(
            "MAINTENANCE_JOB_STALE_SECONDS",
            90,
            3,
            86_400,
            "a job without a sign of life this long (≥ 3 heartbeats) is stale: a redelivered task or the "
            "scheduler takes it over and it resumes from its cursor",
            **_OPS,
        )
    )
    compaction_interval_minutes: int = _knob(
        integer(
            "COMPACTION_INTERVAL_MINUTES",
            360,
            1,
            100_000,
            "periodic compaction (installed by `install_schedule --apply`)",
            **_OPS,
        )
    )
    review_detection_interval_minutes: int = _knob(
        integer(
            "REVIEW_DETECTION_INTERVAL_MINUTES", 720, 1, 100_000, "periodic review-queue detection", **_OPS
        )
    )
    expiry_interval_minutes: int = _knob(
        integer("EXPIRY_INTERVAL_MINUTES", 60, 1, 100_000, "periodic expiry", **_OPS)
    )
    search_indexes_interval_minutes: int = _knob(
        integer(
            "SEARCH_INDEXES_INTERVAL_MINUTES",
            1440,
            1,
            100_000,
            "periodic partial-HNSW-index sync for very large users and namespaces (builds run "
            "CONCURRENTLY, so daily is cheap when nothing changed)",
            **_OPS,
        )
    )
    search_indexes_time_limit_seconds: int = _knob(
        integer(
            "SEARCH_INDEXES_TIME_LIMIT_SECONDS",
            7200,
            60,
            86400,
            "soft time limit of that task (index builds take minutes; an interrupted one starts over)",
            **_OPS,
        )
    )
    embedding_sweep_interval_minutes: int = _knob(
        integer(
            "EMBEDDING_SWEEP_INTERVAL_MINUTES",
            10,
            1,
            100_000,
            "the periodic job that re-queues the embedding of memories stored while the provider was down",
            **_OPS,
        )
    )
    embedding_sweep_batch: int = _knob(
        integer("EMBEDDING_SWEEP_BATCH", 1000, 1, 1_000_000, "memories that job re-queues at a time", **_OPS)
    )
    # Forgetting: days without use before a memory expires, per kind (0 = never).
    ttl_days_episodic: int = _knob(
        integer(
            "MEMORY_TTL_DAYS_EPISODIC",
            213,
            0,
            100_000,
            "days (7 months) without use after which an episodic memory expires; 0 = never; pinned "
            "memories never expire",
        )
    )
    ttl_days_semantic: int = _knob(
        integer("MEMORY_TTL_DAYS_SEMANTIC", 213, 0, 100_000, "the same for a semantic memory")
    )
    ttl_days_procedural: int = _knob(
        integer("MEMORY_TTL_DAYS_PROCEDURAL", 213, 0, 100_000, "the same for a procedure")
    )
    ttl_days_short_term: int = _knob(
        integer("MEMORY_TTL_DAYS_SHORT_TERM", 213, 0, 100_000, "the same for a short-term session")
    )
    keep_top_n: int = _knob(
        integer(
            "MEMORY_KEEP_TOP_N",
            0,
            0,
            10_000_000,
            "keep at most N active episodic memories per user, by recency and usefulness",
            default_doc="`0` (off)",
        )
    )
    retention_half_life_days: float = _knob(
        number("MEMORY_RETENTION_HALF_LIFE_DAYS", 30.0, 0.1, 1e5, "recency half-life of that ranking")
    )
    expiry_grace_days: int = _knob(
        integer(
            "MEMORY_EXPIRY_GRACE_DAYS",
            30,
            0,
            100_000,
            "expired memories are soft-deleted first and purged (text and lineage) this long after",
        )
    )


@dataclass(frozen=True, slots=True)
class KindsConfig:
    """Short-term sessions, procedures, extraction and interactions."""

    session_context_window_tokens: int = _knob(
        integer(
            "SESSION_CONTEXT_WINDOW_TOKENS",
            24_000,
            100,
            10_000_000,
            "context window a short-term session is kept within (a session's own "
            "`context_window_tokens`, else its agent profile's `session.context_window_tokens`, wins)",
        )
    )
    # Hysteresis, so an LLM summary is not asked for on every append.
    session_trim_at: float = _knob(
        number(
            "SESSION_TRIM_AT",
            0.8,
            0.05,
            1.0,
            "a session (messages + summary) is trimmed when it passes this x window...",
        )
    )
    session_trim_to: float = _knob(
        number("SESSION_TRIM_TO", 0.6, 0.01, 1.0, "...down to this x window (at most `SESSION_TRIM_AT`)")
    )
    session_summary_max_tokens: int = _knob(
        integer(
            "SESSION_SUMMARY_MAX_TOKENS",
            500,
            0,
            100_000,
            "longest session summary of trimmed messages: the LLM's when one is configured, else "
            "extractive (the sentences that carry names, numbers, dates, preferences and decisions, one "
            "`speaker: sentence` line each); 0 = never summarise",
        )
    )
    procedure_confidence_divisor: float = _knob(
        number(
            "PROCEDURE_CONFIDENCE_DIVISOR",
            10.0,
            0.1,
            1e6,
            "confidence = min(avg_success x (1 + executions / divisor), 1)",
        )
    )
    procedure_recommend_threshold: float = _knob(
        number(
            "PROCEDURE_RECOMMEND_THRESHOLD",
            0.7,
            0.0,
            1.0,
            "a procedure is recommended at or above this confidence",
        )
    )
    procedure_match_max_distance: float = _knob(
        number(
            "PROCEDURE_MATCH_MAX_DISTANCE",
            0.25,
            0.0,
            2.0,
            "cosine distance within which the nearest recorded pattern is suggested",
        )
    )
    extraction_mode: str = _knob(
        choice(
            "EXTRACTION_MODE",
            "auto",
            ("auto", "llm", "rules"),
            "`auto` (LLM when `LLM_MODEL` is set, else rules), `llm`, `rules`",
        )
    )
    interaction_max_messages: int = _knob(
        integer("INTERACTION_MAX_MESSAGES", 500, 1, 100_000, "messages one `POST /interactions` may carry")
    )
    interactions_batch_max: int = _knob(
        integer(
            "INTERACTIONS_BATCH_MAX", 50, 1, 10_000, "interactions one `POST /interactions/batch` may carry"
        )
    )
    interaction_judge_messages: bool = _knob(
        flag(
            "INTERACTION_JUDGE_MESSAGES",
            False,
            "send messages kept as said through the relation judge too (by default only an identical "
            "text in the scope is the same memory; the facts drawn from them are always judged)",
        )
    )


@dataclass(frozen=True, slots=True)
class QueryTimeConfig:
    """Time expressions in search and context queries (selectors/search/time_window.py)."""

    mode: str = _knob(
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
    boost: float = _knob(
        number(
            "SEARCH_QUERY_TIME_BOOST",
            1.0,
            0.0,
            10.0,
            "a memory dated in that window scores (1 + this) times as much",
        )
    )


@dataclass(frozen=True, slots=True)
class QuotaConfig:
    """Per-key request rate and per-tenant memory quota (api/throttling.py, services/quotas.py)."""

    requests_per_minute: int = _knob(
        integer(
            "QUOTA_REQUESTS_PER_MINUTE",
            0,
            0,
            10_000_000,
            'requests per minute per API key; past it a 429 with `Retry-After` ("Quotas and throttling")',
            default_doc="`0` (off)",
            **_OPS,
        )
    )
    max_memories: int = _knob(
        integer(
            "QUOTA_MAX_MEMORIES",
            0,
            0,
            1_000_000_000,
            "active memories per tenant; a store past it is a 403 `quota_exceeded`",
            default_doc="`0` (off)",
            **_OPS,
        )
    )
    count_ttl_seconds: int = _knob(
        integer(
            "QUOTA_COUNT_TTL_SECONDS",
            60,
            1,
            86_400,
            "how long a tenant's counted memories are trusted before they are counted again",
            **_OPS,
        )
    )


_DOMAINS: tuple[type[Any], ...] = (
    EmbeddingsConfig,
    LLMConfig,
    JudgeConfig,
    StoreConfig,
    KindsConfig,
    SearchConfig,
    QueryTimeConfig,
    ContextConfig,
    MaintenanceConfig,
    QuotaConfig,
)


def _declared_in(cls: type[Any]) -> list[Setting[Any]]:
    found: list[Setting[Any]] = []
    for field in dataclasses.fields(cls):
        nested = field.metadata.get("nested")
        found.extend(_declared_in(nested) if nested else [field.metadata["setting"]])
    return found


def _unique(found: list[Setting[Any]]) -> tuple[Setting[Any], ...]:
    """Each setting once; a knob two objects read is one declaration that both fields name."""
    by_name: dict[str, Setting[Any]] = {}
    for setting in found:
        if by_name.setdefault(setting.name, setting) is not setting:
            raise ImproperlyConfigured(f"{setting.name} is declared twice in memory_app/conf.py")
    return tuple(by_name.values())


# Every knob once, in the order settings.py parses them and the docs tables list them.
DECLARED: tuple[Setting[Any], ...] = _unique([s for cls in _DOMAINS for s in _declared_in(cls)])

# Defaults that depend on a value parsed before them, or on where the checkout is.
_DERIVED_DEFAULTS: dict[str, Callable[[Mapping[str, Any], Path], Any]] = {
    "EMBEDDING_MODEL": lambda values, _: (
        "all-MiniLM-L6-v2" if values["EMBEDDING_PROVIDER"] == "local" else "text-embedding-3-small"
    ),
    "EMBEDDING_ONNX_DIR": lambda _, base_dir: str(base_dir / "var" / "models"),
}


def _check_together(values: Mapping[str, Any]) -> None:
    """The rules between knobs, each stopping start-up with a message naming them."""
    if values["EMBEDDING_PROVIDER"] == "openai" and not values["OPENAI_API_KEY"]:
        raise ImproperlyConfigured("OPENAI_API_KEY is required when EMBEDDING_PROVIDER=openai")
    # At least three heartbeats, so one slow database write is not a death.
    if values["MAINTENANCE_JOB_STALE_SECONDS"] < 3 * values["MAINTENANCE_JOB_HEARTBEAT_SECONDS"]:
        raise ImproperlyConfigured(
            "MAINTENANCE_JOB_STALE_SECONDS must be at least 3 x MAINTENANCE_JOB_HEARTBEAT_SECONDS"
        )
    if values["SESSION_TRIM_TO"] > values["SESSION_TRIM_AT"]:
        raise ImproperlyConfigured("SESSION_TRIM_TO must be <= SESSION_TRIM_AT")
    shares = [values[name] for name in values if name.startswith("CONTEXT_ALL_SHARE_")]
    if not sum(shares) > 0:
        raise ImproperlyConfigured("CONTEXT_ALL_SHARE_* must not all be 0")


def settings_from_env(*, base_dir: Path) -> dict[str, Any]:
    """Every knob parsed strictly from the environment, by its Django setting name (settings.py)."""
    values: dict[str, Any] = {}
    for setting in DECLARED:
        derive = _DERIVED_DEFAULTS.get(setting.name)
        values[setting.name] = (
            setting.read() if derive is None else setting.read(default=derive(values, base_dir))
        )
    _check_together(values)
    return values


@_read_once
def store_config() -> StoreConfig:
    return _build(StoreConfig)


@_read_once
def judge_config() -> JudgeConfig:
    return _build(JudgeConfig)


@_read_once
def llm_config() -> LLMConfig:
    return _build(LLMConfig)


@_read_once
def search_config() -> SearchConfig:
    return _build(SearchConfig)


@_read_once
def context_config() -> ContextConfig:
    return _build(ContextConfig)


@_read_once
def embeddings_config() -> EmbeddingsConfig:
    return _build(EmbeddingsConfig)


@_read_once
def maintenance_config() -> MaintenanceConfig:
    return _build(MaintenanceConfig)


@_read_once
def kinds_config() -> KindsConfig:
    return _build(KindsConfig)


@_read_once
def query_time_config() -> QueryTimeConfig:
    return _build(QueryTimeConfig)


@_read_once
def quota_config() -> QuotaConfig:
    return _build(QuotaConfig)
