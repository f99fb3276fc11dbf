"""The service's tuning knobs, grouped per domain into frozen, typed objects read once.

`project/settings.py` stays the single source of the values: it parses and range-checks every
variable strictly at start-up. This module only groups what it parsed, so a function takes
`store_config().max_batch` instead of reading `settings.STORE_MAX_BATCH` at its call site, and a
domain's knobs can be seen (and passed around) as one value.

Each `<domain>_config()` builds its object from `django.conf.settings` on first use and then hands
out the same object. Changing a setting at run time through Django's own mechanism
(`override_settings`, pytest-django's `settings` fixture) sends `setting_changed`, and the receiver
below drops every cached object, so the next call sees the new value; nothing else changes them.

Django's own and the infrastructure's settings (DEBUG, SECRET_KEY, ALLOWED_HOSTS, DATABASES and the
replica list, CELERY_*, the API's request limits, health-check timeouts) are still read from
`django.conf.settings` where they are used: they configure the frameworks, not the memory service.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import TypeVar

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

__all__ = [
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
    "store_config",
]

_T = TypeVar("_T")
_cache_clears: list[Callable[[], None]] = []


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

    dedup_enabled: bool
    candidates_k: int
    # Scopes up to this many active rows are searched exactly; larger ones by HNSW.
    exact_scope_max: int
    hnsw_ef_search: int
    max_batch: int
    max_text_chars: int
    default_confidence: float
    feedback_step: float
    metadata_max_bytes: int
    metadata_max_depth: int
    metadata_max_keys: int
    metadata_max_key_chars: int
    # Reads' access counts are written by a background thread this often; 0: at once (store/access.py).
    access_flush_seconds: float


@_read_once
def store_config() -> StoreConfig:
    return StoreConfig(
        dedup_enabled=settings.STORE_DEDUP_ENABLED,
        candidates_k=settings.STORE_CANDIDATES_K,
        exact_scope_max=settings.STORE_EXACT_SCOPE_MAX,
        hnsw_ef_search=settings.STORE_HNSW_EF_SEARCH,
        max_batch=settings.STORE_MAX_BATCH,
        max_text_chars=settings.MEMORY_MAX_TEXT_CHARS,
        default_confidence=settings.MEMORY_DEFAULT_CONFIDENCE,
        feedback_step=settings.MEMORY_FEEDBACK_STEP,
        metadata_max_bytes=settings.MEMORY_METADATA_MAX_BYTES,
        metadata_max_depth=settings.MEMORY_METADATA_MAX_DEPTH,
        metadata_max_keys=settings.MEMORY_METADATA_MAX_KEYS,
        metadata_max_key_chars=settings.MEMORY_METADATA_MAX_KEY_CHARS,
        access_flush_seconds=settings.MEMORY_ACCESS_FLUSH_SECONDS,
    )


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """The relation judge: which one, and overrides of the calibration file's two thresholds."""

    judge: str
    # None: the value fitted per embedding model in judge/calibration/<model>.json.
    candidate_radius: float | None
    review_below: float | None
    llm_timeout_seconds: float


@_read_once
def judge_config() -> JudgeConfig:
    return JudgeConfig(
        judge=settings.DEDUP_JUDGE,
        candidate_radius=settings.DEDUP_CANDIDATE_RADIUS,
        review_below=settings.DEDUP_REVIEW_BELOW,
        llm_timeout_seconds=settings.DEDUP_LLM_TIMEOUT_SECONDS,
    )


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """The OpenAI-compatible chat model used by the LLM judge, extraction and session summaries."""

    model: str
    api_key: str
    base_url: str
    timeout_seconds: float

    @property
    def configured(self) -> bool:
        """A model and a key: the features that need an LLM are offered."""
        return bool(self.model and self.api_key)


@_read_once
def llm_config() -> LLMConfig:
    return LLMConfig(
        model=settings.LLM_MODEL,
        api_key=settings.OPENAI_API_KEY,
        base_url=settings.OPENAI_BASE_URL,
        timeout_seconds=settings.OPENAI_TIMEOUT_SECONDS,
    )


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """Search: candidate plans and HNSW settings, ranking, load-time dedup, clustering, MMR."""

    # Candidate generation (selectors/search/candidates.py).
    exact_max_rows: int
    hnsw_ef_search: int
    partial_ef_search: int
    hnsw_max_scan_tuples: int
    # Per-scope partial HNSW indexes (services/maintenance/search_indexes.py).
    partial_index_min_rows: int
    partial_index_max_fraction: float
    index_build_memory_mb: int
    # Ranking.
    fusion: str
    vector_weight: float
    rrf_k: float
    candidates: int
    fetch_margin: int
    lexical: str
    bm25_k1: float
    bm25_b: float
    # Above this many rows of a scope, a query word held by more rows selects none
    # (selectors/search/lexical.py).
    bm25_term_cap: int
    context_weight: float
    decay_half_life_days: float
    decay_floor: float
    ace_confidence_weight: float
    ace_feedback_weight: float
    # Load-time dedup, clustering and MMR (each may be overridden per agent profile).
    dedup_enabled: bool
    # None: the calibration's candidate radius.
    dedup_threshold: float | None
    dedup_use_llm: bool
    clustering_enabled: bool
    dbscan_epsilon: float
    dbscan_min_points: int
    mmr_enabled: bool
    mmr_lambda: float


@_read_once
def search_config() -> SearchConfig:
    return SearchConfig(
        exact_max_rows=settings.SEARCH_EXACT_MAX_ROWS,
        hnsw_ef_search=settings.SEARCH_HNSW_EF_SEARCH,
        partial_ef_search=settings.SEARCH_PARTIAL_EF_SEARCH,
        hnsw_max_scan_tuples=settings.SEARCH_HNSW_MAX_SCAN_TUPLES,
        partial_index_min_rows=settings.SEARCH_PARTIAL_INDEX_MIN_ROWS,
        partial_index_max_fraction=settings.SEARCH_PARTIAL_INDEX_MAX_FRACTION,
        index_build_memory_mb=settings.SEARCH_INDEX_BUILD_MEMORY_MB,
        fusion=settings.SEARCH_FUSION,
        vector_weight=settings.SEARCH_VECTOR_WEIGHT,
        rrf_k=settings.SEARCH_RRF_K,
        candidates=settings.SEARCH_CANDIDATES,
        fetch_margin=settings.SEARCH_FETCH_MARGIN,
        lexical=settings.SEARCH_LEXICAL,
        bm25_k1=settings.SEARCH_BM25_K1,
        bm25_b=settings.SEARCH_BM25_B,
        bm25_term_cap=settings.SEARCH_BM25_TERM_CAP,
        context_weight=settings.SEARCH_CONTEXT_WEIGHT,
        decay_half_life_days=settings.SEARCH_DECAY_HALF_LIFE_DAYS,
        decay_floor=settings.SEARCH_DECAY_FLOOR,
        ace_confidence_weight=settings.SEARCH_ACE_CONFIDENCE_WEIGHT,
        ace_feedback_weight=settings.SEARCH_ACE_FEEDBACK_WEIGHT,
        dedup_enabled=settings.SEARCH_DEDUP_ENABLED,
        dedup_threshold=settings.SEARCH_DEDUP_THRESHOLD,
        dedup_use_llm=settings.SEARCH_DEDUP_USE_LLM,
        clustering_enabled=settings.SEARCH_CLUSTERING_ENABLED,
        dbscan_epsilon=settings.SEARCH_DBSCAN_EPSILON,
        dbscan_min_points=settings.SEARCH_DBSCAN_MIN_POINTS,
        mmr_enabled=settings.SEARCH_MMR_ENABLED,
        mmr_lambda=settings.SEARCH_MMR_LAMBDA,
    )


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """POST /context (one kind, scored) and POST /context/all (every kind, shared budget)."""

    similarity_weight: float
    confidence_weight: float
    max_tokens: int
    candidates: int
    relevance_floor: float
    all_max_tokens: int
    # Each part's first share of /context/all's budget, by part name (read-only).
    all_shares: Mapping[str, float]
    all_candidates: int


@_read_once
def context_config() -> ContextConfig:
    return ContextConfig(
        similarity_weight=settings.CONTEXT_SIMILARITY_WEIGHT,
        confidence_weight=settings.CONTEXT_CONFIDENCE_WEIGHT,
        max_tokens=settings.CONTEXT_MAX_TOKENS,
        candidates=settings.CONTEXT_CANDIDATES,
        relevance_floor=settings.CONTEXT_RELEVANCE_FLOOR,
        all_max_tokens=settings.CONTEXT_ALL_MAX_TOKENS,
        all_shares=MappingProxyType(dict(settings.CONTEXT_ALL_SHARES)),
        all_candidates=settings.CONTEXT_ALL_CANDIDATES,
    )


@dataclass(frozen=True, slots=True)
class OpenAIEmbeddingConfig:
    """The remote provider's client and batching (hashable: the provider cache's key)."""

    api_key: str
    base_url: str
    timeout_seconds: float
    batch_size: int
    max_tokens_per_request: int
    max_retries: int
    backoff_seconds: float


@dataclass(frozen=True, slots=True)
class EmbeddingsConfig:
    """Providers, the embedding cache and its near-duplicate tier, the breaker, the statistics."""

    provider: str
    model: str
    openai: OpenAIEmbeddingConfig
    cache_enabled: bool
    local_batching: bool
    local_batch_wait_ms: float
    local_max_batch: int
    torch_threads: int
    local_runtime: str
    onnx_dir: str
    breaker_failures: int
    breaker_seconds: float
    near_dup: str
    # SEMANTIC_DEDUP_THRESHOLD: the proxy model's cosine similarity for near-duplicate reuse.
    near_dup_threshold: float
    near_dup_surface_min: float
    near_dup_ef_search: int
    price_per_1k_tokens: float
    stats_flush_seconds: float
    stats_log_every: int


@_read_once
def embeddings_config() -> EmbeddingsConfig:
    return EmbeddingsConfig(
        provider=settings.EMBEDDING_PROVIDER,
        model=settings.EMBEDDING_MODEL,
        openai=OpenAIEmbeddingConfig(
            api_key=settings.OPENAI_API_KEY,
            base_url=settings.OPENAI_BASE_URL,
            timeout_seconds=settings.OPENAI_EMBEDDING_TIMEOUT_SECONDS,
            batch_size=settings.OPENAI_EMBEDDING_BATCH_SIZE,
            max_tokens_per_request=settings.OPENAI_EMBEDDING_MAX_TOKENS_PER_REQUEST,
            max_retries=settings.OPENAI_EMBEDDING_MAX_RETRIES,
            backoff_seconds=settings.OPENAI_EMBEDDING_BACKOFF_SECONDS,
        ),
        cache_enabled=settings.EMBEDDING_CACHE_ENABLED,
        local_batching=settings.EMBEDDING_LOCAL_BATCHING,
        local_batch_wait_ms=settings.EMBEDDING_LOCAL_BATCH_WAIT_MS,
        local_max_batch=settings.EMBEDDING_LOCAL_MAX_BATCH,
        torch_threads=settings.EMBEDDING_TORCH_THREADS,
        local_runtime=settings.EMBEDDING_LOCAL_RUNTIME,
        onnx_dir=settings.EMBEDDING_ONNX_DIR,
        breaker_failures=settings.EMBEDDING_BREAKER_FAILURES,
        breaker_seconds=settings.EMBEDDING_BREAKER_SECONDS,
        near_dup=settings.EMBEDDING_NEAR_DUP,
        near_dup_threshold=settings.SEMANTIC_DEDUP_THRESHOLD,
        near_dup_surface_min=settings.EMBEDDING_NEAR_DUP_SURFACE_MIN,
        near_dup_ef_search=settings.EMBEDDING_NEAR_DUP_EF_SEARCH,
        price_per_1k_tokens=settings.EMBEDDING_PRICE_PER_1K_TOKENS,
        stats_flush_seconds=settings.EMBEDDING_STATS_FLUSH_SECONDS,
        stats_log_every=settings.EMBEDDING_STATS_LOG_EVERY,
    )


@dataclass(frozen=True, slots=True)
class MaintenanceConfig:
    """Background work: compaction, maintenance jobs, periodic schedules, expiry and retention."""

    compaction_radius: float
    compaction_judge: str
    compaction_exact_max_rows: int
    # 0: the BLAS library's default thread count.
    compaction_blas_threads: int
    compaction_max_group_size: int
    job_heartbeat_seconds: int
    job_stale_seconds: int
    compaction_interval_minutes: int
    review_detection_interval_minutes: int
    expiry_interval_minutes: int
    search_indexes_interval_minutes: int
    search_indexes_time_limit_seconds: int
    embedding_sweep_interval_minutes: int
    embedding_sweep_batch: int
    # Forgetting: days without use before a memory expires, per kind (0 = never).
    ttl_days_episodic: int
    ttl_days_semantic: int
    ttl_days_procedural: int
    ttl_days_short_term: int
    keep_top_n: int
    retention_half_life_days: float
    expiry_grace_days: int


@_read_once
def maintenance_config() -> MaintenanceConfig:
    return MaintenanceConfig(
        compaction_radius=settings.COMPACTION_RADIUS,
        compaction_judge=settings.COMPACTION_JUDGE,
        compaction_exact_max_rows=settings.COMPACTION_EXACT_MAX_ROWS,
        compaction_blas_threads=settings.COMPACTION_BLAS_THREADS,
        compaction_max_group_size=settings.COMPACTION_MAX_GROUP_SIZE,
        job_heartbeat_seconds=settings.MAINTENANCE_JOB_HEARTBEAT_SECONDS,
        job_stale_seconds=settings.MAINTENANCE_JOB_STALE_SECONDS,
        compaction_interval_minutes=settings.COMPACTION_INTERVAL_MINUTES,
        review_detection_interval_minutes=settings.REVIEW_DETECTION_INTERVAL_MINUTES,
        expiry_interval_minutes=settings.EXPIRY_INTERVAL_MINUTES,
        search_indexes_interval_minutes=settings.SEARCH_INDEXES_INTERVAL_MINUTES,
        search_indexes_time_limit_seconds=settings.SEARCH_INDEXES_TIME_LIMIT_SECONDS,
        embedding_sweep_interval_minutes=settings.EMBEDDING_SWEEP_INTERVAL_MINUTES,
        embedding_sweep_batch=settings.EMBEDDING_SWEEP_BATCH,
        ttl_days_episodic=settings.MEMORY_TTL_DAYS_EPISODIC,
        ttl_days_semantic=settings.MEMORY_TTL_DAYS_SEMANTIC,
        ttl_days_procedural=settings.MEMORY_TTL_DAYS_PROCEDURAL,
        ttl_days_short_term=settings.MEMORY_TTL_DAYS_SHORT_TERM,
        keep_top_n=settings.MEMORY_KEEP_TOP_N,
        retention_half_life_days=settings.MEMORY_RETENTION_HALF_LIFE_DAYS,
        expiry_grace_days=settings.MEMORY_EXPIRY_GRACE_DAYS,
    )


@dataclass(frozen=True, slots=True)
class KindsConfig:
    """Short-term sessions, procedures, extraction and interactions."""

    session_context_window_tokens: int
    session_trim_at: float
    session_trim_to: float
    session_summary_max_tokens: int
    procedure_confidence_divisor: float
    procedure_recommend_threshold: float
    procedure_match_max_distance: float
    extraction_mode: str
    interaction_max_messages: int
    interactions_batch_max: int
    interaction_judge_messages: bool


@_read_once
def kinds_config() -> KindsConfig:
    return KindsConfig(
        session_context_window_tokens=settings.SESSION_CONTEXT_WINDOW_TOKENS,
        session_trim_at=settings.SESSION_TRIM_AT,
        session_trim_to=settings.SESSION_TRIM_TO,
        session_summary_max_tokens=settings.SESSION_SUMMARY_MAX_TOKENS,
        procedure_confidence_divisor=settings.PROCEDURE_CONFIDENCE_DIVISOR,
        procedure_recommend_threshold=settings.PROCEDURE_RECOMMEND_THRESHOLD,
        procedure_match_max_distance=settings.PROCEDURE_MATCH_MAX_DISTANCE,
        extraction_mode=settings.EXTRACTION_MODE,
        interaction_max_messages=settings.INTERACTION_MAX_MESSAGES,
        interactions_batch_max=settings.INTERACTIONS_BATCH_MAX,
        interaction_judge_messages=settings.INTERACTION_JUDGE_MESSAGES,
    )


@dataclass(frozen=True, slots=True)
class QueryTimeConfig:
    """Time expressions in search and context queries (selectors/search/time_window.py)."""

    mode: str  # "boost", "filter" or "off"
    boost: float  # a memory whose event date is in the window scores (1 + boost) times as much


@_read_once
def query_time_config() -> QueryTimeConfig:
    return QueryTimeConfig(mode=settings.SEARCH_QUERY_TIME, boost=settings.SEARCH_QUERY_TIME_BOOST)


@dataclass(frozen=True, slots=True)
class QuotaConfig:
    """Per-key request rate and per-tenant memory quota (api/throttling.py, services/quotas.py)."""

    requests_per_minute: int  # per API key; 0: no limit
    max_memories: int  # active memories per tenant; 0: no limit
    count_ttl_seconds: int  # how long a tenant's counted memories are trusted from the cache


@_read_once
def quota_config() -> QuotaConfig:
    return QuotaConfig(
        requests_per_minute=settings.QUOTA_REQUESTS_PER_MINUTE,
        max_memories=settings.QUOTA_MAX_MEMORIES,
        count_ttl_seconds=settings.QUOTA_COUNT_TTL_SECONDS,
    )
