"""The write path and its judge: StoreConfig, JudgeConfig."""

from __future__ import annotations

from dataclasses import dataclass

from memory_app.conf.declare import knob
from project.env import choice, flag, integer, number, optional_number


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """The write path: validation limits, store-time dedup, new-memory defaults, feedback."""

    dedup_enabled: bool = knob(
        flag(
            "STORE_DEDUP_ENABLED",
            True,
            "semantic dedup on store (an agent profile's `deduplicate` or `?deduplicate=` overrides; "
            "identical text is always returned as `duplicate_of`: identical up to case, compatibility "
            "forms, whitespace, quote style and trailing punctuation, never across a digit, sign, "
            "symbol, emoji or letter)",
        )
    )
    candidates_k: int = knob(
        integer(
            "STORE_CANDIDATES_K",
            5,
            1,
            50,
            "nearest neighbours within the radius handed to the judge per new memory",
        )
    )
    exact_scope_max: int = knob(
        integer(
            "STORE_EXACT_SCOPE_MAX",
            2000,
            0,
            10_000_000,
            "scopes up to this many active rows are searched exactly (B-tree + exact distance); larger "
            "ones through HNSW",
        )
    )
    hnsw_ef_search: int = knob(
        integer(
            "STORE_HNSW_EF_SEARCH",
            80,
            10,
            1000,
            "`hnsw.ef_search` for store candidates in large scopes (iterative scan, relaxed order)",
        )
    )
    max_batch: int = knob(
        integer("STORE_MAX_BATCH", 100, 1, 10_000, "most memories in one `POST /api/v1/memories` list")
    )
    max_text_chars: int = knob(
        integer("MEMORY_MAX_TEXT_CHARS", 8000, 100, 1_000_000, "longest memory text accepted")
    )
    default_confidence: float = knob(
        number("MEMORY_DEFAULT_CONFIDENCE", 0.5, 0.0, 1.0, "confidence of a new memory when none is given")
    )
    feedback_step: float = knob(
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
    metadata_max_bytes: int = knob(
        integer(
            "MEMORY_METADATA_MAX_BYTES",
            16384,
            256,
            1_048_576,
            "largest `metadata` as JSON (UTF-8 bytes); more is a 400 naming the limit, on every write path",
        )
    )
    metadata_max_depth: int = knob(
        integer("MEMORY_METADATA_MAX_DEPTH", 32, 1, 64, "deepest nesting of `metadata`")
    )
    metadata_max_keys: int = knob(
        integer("MEMORY_METADATA_MAX_KEYS", 256, 1, 100_000, "most keys of `metadata` (all levels together)")
    )
    metadata_max_key_chars: int = knob(
        integer("MEMORY_METADATA_MAX_KEY_CHARS", 128, 1, 10_000, "longest key of `metadata`")
    )
    # Reads' access counts are written by a background thread this often; 0: at once (store/access.py).
    access_flush_seconds: float = knob(
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

    judge: str = knob(
        choice(
            "DEDUP_JUDGE",
            "offline",
            ("offline", "llm"),
            "default relation judge for store-time dedup: `offline` or `llm` (falls back to offline on "
            "any failure)",
        )
    )
    # None: the value fitted per embedding model in judge/calibration/<model>.json.
    candidate_radius: float | None = knob(
        optional_number(
            "DEDUP_CANDIDATE_RADIUS",
            0.0,
            2.0,
            "cosine-distance radius for dedup candidates",
            default_doc="from `memory_app/judge/calibration/<model>.json`",
        )
    )
    review_below: float | None = knob(
        optional_number(
            "DEDUP_REVIEW_BELOW",
            0.0,
            1.0,
            "a merge/supersede less confident than this is queued for review",
            default_doc="from the calibration file",
        )
    )
    llm_timeout_seconds: float = knob(
        number(
            "DEDUP_LLM_TIMEOUT_SECONDS",
            20.0,
            1.0,
            300.0,
            "timeout of the LLM judge's one call per new memory (on timeout the offline judge answers)",
        )
    )
