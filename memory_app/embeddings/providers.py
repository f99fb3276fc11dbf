"""The provider interface and the choice of provider from settings.

A provider turns texts into L2-normalised float32 rows of `dimensions` columns, in input order,
batching as it needs. It knows nothing about the cache: `embed_texts` puts the cache in front.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

import numpy as np

from memory_app.conf import OpenAIEmbeddingConfig, embeddings_config
from memory_app.embeddings import health
from memory_app.embeddings.active import vector_dimensions
from memory_app.embeddings.local import (
    DEFAULT_MODEL,
    local_batcher,
    local_embed,
    model_dimensions,
    model_embed,
)


class EmbeddingProvider(Protocol):
    name: str
    model: str
    dimensions: int
    # A proxy for near-duplicate reuse only makes sense when this provider is the expensive one.
    is_remote: bool

    def embed(self, texts: list[str]) -> np.ndarray:
        """Rows in input order; raises ApplicationError when the provider fails for good."""
        ...

    def requests_for(self, texts: list[str]) -> int:
        """How many provider requests embedding `texts` takes (for the statistics)."""
        ...


class LocalProvider:
    name = "local"
    is_remote = False

    def __init__(self, *, model: str, dimensions: int) -> None:
        self.model = model
        self.dimensions = dimensions

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embed_begin(texts)()

    def embed_begin(self, texts: list[str], *, query: bool = False) -> Callable[[], np.ndarray]:
        """Start the forward pass and return a function that waits for its rows: with batching the
        pass runs on the batcher's thread while the caller goes on (a search reads full text).
        `query`: a search's query (`local_embed`: the query pass, no token vectors for the judge)."""
        if self.model != DEFAULT_MODEL:  # another local model: its own pass, on torch, unbatched
            rows = model_embed(self.model, texts)
            return lambda: rows
        if embeddings_config().local_batching:  # one forward pass for concurrent requests
            wait = local_batcher().submit(texts, query=query)
            return lambda: np.asarray(wait())
        vectors = local_embed(texts, query=query)
        return lambda: vectors

    def requests_for(self, texts: list[str]) -> int:
        return 1 if texts else 0


_lock = threading.Lock()
_providers: dict[tuple[str, str, int, OpenAIEmbeddingConfig], EmbeddingProvider] = {}


def _settings_key(model: str | None) -> tuple[str, str, int, OpenAIEmbeddingConfig]:
    config = embeddings_config()
    # OpenAI is asked for the columns' width, so the width is part of its key: after a resize the
    # next call builds a provider of it. A local model has its own width, read from the model (and
    # checked against the columns where vectors are written), so tools with no database embed too.
    width = 0 if config.provider == "local" else vector_dimensions()
    return (config.provider, model or config.model, width, config.openai)


def get_provider(model: str | None = None) -> EmbeddingProvider:
    """One provider object per configuration, model and process (the OpenAI client keeps its
    connections). `model`: the live one the caller read from the registry (default: the setting)."""
    key = _settings_key(model)
    provider = _providers.get(key)
    if provider is None:
        with _lock:
            provider = _providers.get(key)
            if provider is None:
                provider = _build(key)
                _providers[key] = provider
    return provider


def starts_beside(provider: EmbeddingProvider) -> bool:
    """Whether `embed_begin` returns before its vectors exist: the packaged local model, its pass on
    the batcher's thread. A remote provider, another local model or an unbatched pass computes the
    vectors inside the call."""
    return not provider.is_remote and provider.model == DEFAULT_MODEL and embeddings_config().local_batching


class _Recorded:
    """The provider with every `embed` call recorded in embeddings/health.py (readiness reads it)."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embed_begin(texts)()

    def embed_begin(self, texts: list[str], *, query: bool = False) -> Callable[[], np.ndarray]:
        """The inner provider's `embed_begin` when it has one (the local model), else `embed` now;
        the outcome is recorded when the rows are waited for."""
        begin = getattr(self.inner, "embed_begin", None)
        try:
            if begin is None:
                vectors = self.inner.embed(texts)
                wait: Callable[[], np.ndarray] = lambda: vectors  # noqa: E731
            else:
                wait = begin(texts, query=query)
        except Exception as exc:
            health.record_failure(f"{type(exc).__name__}: {exc}")
            raise

        def finished() -> np.ndarray:
            try:
                rows = wait()
            except Exception as exc:
                health.record_failure(f"{type(exc).__name__}: {exc}")
                raise
            health.record_success()
            return rows

        return finished


def _build(key: tuple[str, str, int, OpenAIEmbeddingConfig]) -> EmbeddingProvider:
    return _Recorded(_build_inner(key))  # type: ignore[return-value]


def _build_inner(key: tuple[str, str, int, OpenAIEmbeddingConfig]) -> EmbeddingProvider:
    name, model, dimensions, openai = key
    if name == "openai":
        # start-up cost: openai only for the remote provider
        from memory_app.embeddings.openai_provider import OpenAIProvider

        return OpenAIProvider(
            model=model,
            dimensions=dimensions,
            api_key=openai.api_key,
            base_url=openai.base_url or None,
            timeout=openai.timeout_seconds,
            batch_size=openai.batch_size,
            max_tokens_per_request=openai.max_tokens_per_request,
            max_retries=openai.max_retries,
            backoff_seconds=openai.backoff_seconds,
        )
    return LocalProvider(model=model, dimensions=model_dimensions(model))
