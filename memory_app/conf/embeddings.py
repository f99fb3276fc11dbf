"""Embedding providers and the cache: OpenAIEmbeddingConfig, EmbeddingsConfig."""

from __future__ import annotations

from dataclasses import dataclass

from memory_app.conf.declare import knob, nested
from memory_app.conf.llm import OPENAI_KEY_SETTING, OPENAI_URL_SETTING
from project.env import choice, flag, integer, number, text


@dataclass(frozen=True, slots=True)
class OpenAIEmbeddingConfig:
    """The remote provider's client and batching (hashable: the provider cache's key)."""

    api_key: str = knob(OPENAI_KEY_SETTING)
    base_url: str = knob(OPENAI_URL_SETTING)
    timeout_seconds: float = knob(
        number(
            "OPENAI_EMBEDDING_TIMEOUT_SECONDS",
            5.0,
            0.1,
            600.0,
            "per embeddings request: embeddings are on the request path, so a silent provider fails fast",
        )
    )
    batch_size: int = knob(
        integer(
            "OPENAI_EMBEDDING_BATCH_SIZE", 2048, 1, 2048, "inputs per embeddings request (the API's limit)"
        )
    )
    max_tokens_per_request: int = knob(
        integer(
            "OPENAI_EMBEDDING_MAX_TOKENS_PER_REQUEST",
            300_000,
            8192,
            300_000,
            "token cap per embeddings request",
        )
    )
    max_retries: int = knob(
        integer(
            "OPENAI_EMBEDDING_MAX_RETRIES",
            2,
            0,
            10,
            "retries of 429, 5xx, timeouts (the SDK's own retries are off)",
        )
    )
    backoff_seconds: float = knob(
        number(
            "OPENAI_EMBEDDING_BACKOFF_SECONDS", 0.5, 0.0, 60.0, "base of those retries' exponential backoff"
        )
    )


@dataclass(frozen=True, slots=True)
class EmbeddingsConfig:
    """Providers, the embedding cache and its near-duplicate tier, the breaker, the statistics."""

    provider: str = knob(
        choice(
            "EMBEDDING_PROVIDER",
            "local",
            ("local", "openai"),
            "`local` (a sentence-transformers model on the CPU, all-MiniLM-L6-v2 by default) or `openai`",
        )
    )
    model: str = knob(
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
    openai: OpenAIEmbeddingConfig = nested(OpenAIEmbeddingConfig)  # noqa: RUF009 (a field spec, like knob)
    cache_enabled: bool = knob(
        flag(
            "EMBEDDING_CACHE_ENABLED",
            True,
            "the embedding cache (exact hash, normalised hash, near duplicate), private per tenant",
        )
    )
    # The local model embeds the texts of concurrent requests of one process in one forward pass
    # (embeddings/batching.py, bench/load.py).
    local_batching: bool = knob(
        flag(
            "EMBEDDING_LOCAL_BATCHING",
            True,
            "the local model embeds the texts of concurrent requests of one process in one forward pass",
        )
    )
    local_batch_wait_ms: float = knob(
        number(
            "EMBEDDING_LOCAL_BATCH_WAIT_MS",
            2.0,
            0.0,
            100.0,
            "how long a text waits for company, while other requests of its process are in progress",
        )
    )
    local_max_batch: int = knob(integer("EMBEDDING_LOCAL_MAX_BATCH", 32, 1, 1024, "the largest shared batch"))
    # 1 by default: with two threads, any other busy process on the cores makes torch's threads wait
    # on each other (one short text took 240-520 ms instead of 13 ms on a 2-core machine at load 2).
    torch_threads: int = knob(
        integer(
            "EMBEDDING_TORCH_THREADS",
            1,
            0,
            256,
            "threads of the local model's pass per process (torch or ONNX Runtime) (`0`: torch's "
            "default, every core); more than one pays only on a machine with cores to spare",
        )
    )
    local_runtime: str = knob(
        choice(
            "EMBEDDING_LOCAL_RUNTIME",
            "onnx",
            ("onnx", "torch"),
            "what runs the local model's pass: `onnx` (ONNX Runtime, ~2.5x less CPU per short text, same "
            "vectors to ~1e-7; falls back to torch if it cannot start) or `torch`",
        )
    )
    # A search's query through an int8 copy of the ONNX file (embeddings/forward.py): ~1.1 ms a
    # short query instead of ~4.1; what is stored or judged always comes from the full model.
    query_int8: bool = knob(
        flag(
            "EMBEDDING_QUERY_INT8",
            True,
            "a search's query runs through an int8 copy of the local model's ONNX file (weights "
            "quantized per channel): ~4x faster, cosine ~0.994 with the full model's vector; stored "
            "and judged texts always run the full model",
        )
    )
    onnx_dir: str = knob(
        text(
            "EMBEDDING_ONNX_DIR",
            "var/models",
            "where the ONNX file exported from the installed weights is kept (written once, under a "
            "file lock; relative to the checkout)",
        )
    )
    breaker_failures: int = knob(
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
    breaker_seconds: float = knob(
        number("EMBEDDING_BREAKER_SECONDS", 30.0, 0.0, 3600.0, "how long an open breaker stays open")
    )
    near_dup: str = knob(
        choice(
            "EMBEDDING_NEAR_DUP",
            "auto",
            ("auto", "on", "off"),
            "near-duplicate reuse: `auto` (on for a remote provider only), `on`, `off`",
        )
    )
    near_dup_threshold: float = knob(
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
    near_dup_surface_min: float = knob(
        number(
            "EMBEDDING_NEAR_DUP_SURFACE_MIN",
            0.95,
            0.5,
            1.0,
            "and the order-aware surface-sketch similarity a near duplicate also needs",
        )
    )
    near_dup_ef_search: int = knob(
        integer("EMBEDDING_NEAR_DUP_EF_SEARCH", 40, 1, 1000, "`hnsw.ef_search` of the near-duplicate lookup")
    )
    price_per_1k_tokens: float = knob(
        number(
            "EMBEDDING_PRICE_PER_1K_TOKENS",
            0.00002,
            0.0,
            100.0,
            'price used for "estimated cost saved" (text-embedding-3-small)',
            default_doc="`0.00002`",
        )
    )
    stats_flush_seconds: float = knob(
        number(
            "EMBEDDING_STATS_FLUSH_SECONDS", 5.0, 0.0, 3600.0, "cache counters are written at most this often"
        )
    )
    stats_log_every: int = knob(
        integer("EMBEDDING_STATS_LOG_EVERY", 1000, 1, 10**9, "a summary line is logged every N texts")
    )
