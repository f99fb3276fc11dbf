"""Background maintenance and quotas: MaintenanceConfig, QuotaConfig."""

from __future__ import annotations

from dataclasses import dataclass

from memory_app.conf.declare import OPS, knob
from project.env import choice, integer, number


@dataclass(frozen=True, slots=True)
class MaintenanceConfig:
    """Background work: compaction, maintenance jobs, periodic schedules, expiry and retention."""

    compaction_radius: float = knob(
        number(
            "COMPACTION_RADIUS",
            0.45,
            0.01,
            1.0,
            "cosine-distance radius of compaction candidates; tighter than the store path's, because it "
            'is applied to every pair of a whole scope ("Compaction")',
            **OPS,
        )
    )
    compaction_judge: str = knob(
        choice(
            "COMPACTION_JUDGE",
            "offline",
            ("offline", "llm"),
            "relation judge of compaction: `offline` or `llm`",
            **OPS,
        )
    )
    compaction_exact_max_rows: int = knob(
        integer(
            "COMPACTION_EXACT_MAX_ROWS",
            5_000,
            2,
            10_000_000,
            "scopes up to this size compare every pair; larger ones use inverted lists (bench/compaction.py)",
            **OPS,
        )
    )
    compaction_blas_threads: int = knob(
        integer(
            "COMPACTION_BLAS_THREADS",
            1,
            0,
            256,
            "BLAS threads per compaction process (`0`: all cores); 1 suits workers that share the machine",
            **OPS,
        )
    )
    compaction_max_group_size: int = knob(
        integer("COMPACTION_MAX_GROUP_SIZE", 20, 2, 1000, "largest group compaction resolves at once", **OPS)
    )
    job_heartbeat_seconds: int = knob(
        integer(
            "MAINTENANCE_JOB_HEARTBEAT_SECONDS",
            15,
            1,
            3600,
            "a running maintenance job writes a heartbeat this often (from a thread) and after every scope",
            **OPS,
        )
    )
    job_stale_seconds: int = knob(
        integer(
            "MAINTENANCE_JOB_STALE_SECONDS",
            90,
            3,
            86_400,
            "a job without a sign of life this long (≥ 3 heartbeats) is stale: a redelivered task or the "
            "scheduler takes it over and it resumes from its cursor",
            **OPS,
        )
    )
    compaction_interval_minutes: int = knob(
        integer(
            "COMPACTION_INTERVAL_MINUTES",
            360,
            1,
            100_000,
            "periodic compaction (installed by `install_schedule --apply`)",
            **OPS,
        )
    )
    review_detection_interval_minutes: int = knob(
        integer(
            "REVIEW_DETECTION_INTERVAL_MINUTES", 720, 1, 100_000, "periodic review-queue detection", **OPS
        )
    )
    expiry_interval_minutes: int = knob(
        integer("EXPIRY_INTERVAL_MINUTES", 60, 1, 100_000, "periodic expiry", **OPS)
    )
    search_indexes_interval_minutes: int = knob(
        integer(
            "SEARCH_INDEXES_INTERVAL_MINUTES",
            1440,
            1,
            100_000,
            "periodic partial-HNSW-index sync for very large users and namespaces (builds run "
            "CONCURRENTLY, so daily is cheap when nothing changed)",
            **OPS,
        )
    )
    search_indexes_time_limit_seconds: int = knob(
        integer(
            "SEARCH_INDEXES_TIME_LIMIT_SECONDS",
            7200,
            60,
            86400,
            "soft time limit of that task (index builds take minutes; an interrupted one starts over)",
            **OPS,
        )
    )
    embedding_sweep_interval_minutes: int = knob(
        integer(
            "EMBEDDING_SWEEP_INTERVAL_MINUTES",
            10,
            1,
            100_000,
            "the periodic job that re-queues the embedding of memories stored while the provider was down",
            **OPS,
        )
    )
    embedding_sweep_batch: int = knob(
        integer("EMBEDDING_SWEEP_BATCH", 1000, 1, 1_000_000, "memories that job re-queues at a time", **OPS)
    )
    # Forgetting: days without use before a memory expires, per kind (0 = never).
    ttl_days_episodic: int = knob(
        integer(
            "MEMORY_TTL_DAYS_EPISODIC",
            213,
            0,
            100_000,
            "days (7 months) without use after which an episodic memory expires; 0 = never; pinned "
            "memories never expire",
        )
    )
    ttl_days_semantic: int = knob(
        integer("MEMORY_TTL_DAYS_SEMANTIC", 213, 0, 100_000, "the same for a semantic memory")
    )
    ttl_days_procedural: int = knob(
        integer("MEMORY_TTL_DAYS_PROCEDURAL", 213, 0, 100_000, "the same for a procedure")
    )
    ttl_days_short_term: int = knob(
        integer("MEMORY_TTL_DAYS_SHORT_TERM", 213, 0, 100_000, "the same for a short-term session")
    )
    keep_top_n: int = knob(
        integer(
            "MEMORY_KEEP_TOP_N",
            0,
            0,
            10_000_000,
            "keep at most N active episodic memories per user, by recency and usefulness",
            default_doc="`0` (off)",
        )
    )
    retention_half_life_days: float = knob(
        number("MEMORY_RETENTION_HALF_LIFE_DAYS", 30.0, 0.1, 1e5, "recency half-life of that ranking")
    )
    expiry_grace_days: int = knob(
        integer(
            "MEMORY_EXPIRY_GRACE_DAYS",
            30,
            0,
            100_000,
            "expired memories are soft-deleted first and purged (text and lineage) this long after",
        )
    )


@dataclass(frozen=True, slots=True)
class QuotaConfig:
    """Per-key request rate and per-tenant memory quota (api/throttling.py, services/quotas.py)."""

    requests_per_minute: int = knob(
        integer(
            "QUOTA_REQUESTS_PER_MINUTE",
            0,
            0,
            10_000_000,
            'requests per minute per API key; past it a 429 with `Retry-After` ("Quotas and throttling")',
            default_doc="`0` (off)",
            **OPS,
        )
    )
    max_memories: int = knob(
        integer(
            "QUOTA_MAX_MEMORIES",
            0,
            0,
            1_000_000_000,
            "active memories per tenant; a store past it is a 403 `quota_exceeded`",
            default_doc="`0` (off)",
            **OPS,
        )
    )
    count_ttl_seconds: int = knob(
        integer(
            "QUOTA_COUNT_TTL_SECONDS",
            60,
            1,
            86_400,
            "how long a tenant's counted memories are trusted before they are counted again",
            **OPS,
        )
    )
