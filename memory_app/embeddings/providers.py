"""The provider interface and the choice of provider from settings.

A provider turns texts into L2-normalised float32 rows of `dimensions` columns, in input order,
batching as it needs. It knows nothing about the cache: `embed_texts` puts the cache in front.
"""

from __future__ import annotations

import threading
from typing import Protocol

import numpy as np

from memory_app.conf import OpenAIEmbeddingConfig, embeddings_config
from memory_app.db.vectors import DIMENSIONS
from memory_app.embeddings import health
from memory_app.embeddings.local import local_batcher, local_embed


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
        if embeddings_config().local_batching:  # one forward pass for concurrent requests
            return np.asarray(local_batcher().embed(texts))
        return local_embed(texts)

    def requests_for(self, texts: list[str]) -> int:
        return 1 if texts else 0


_lock = threading.Lock()
_providers: dict[tuple[str, str, int, OpenAIEmbeddingConfig], EmbeddingProvider] = {}


def _settings_key() -> tuple[str, str, int, OpenAIEmbeddingConfig]:
    config = embeddings_config()
    return (config.provider, config.model, DIMENSIONS, config.openai)


def get_provider() -> EmbeddingProvider:
    """One provider object per configuration and process (the OpenAI client keeps its connections)."""
    key = _settings_key()
    provider = _providers.get(key)
    if provider is None:
        with _lock:
            provider = _providers.get(key)
            if provider is None:
                provider = _build(key)
                _providers[key] = provider
    return provider


class _Recorded:
    """The provider with every `embed` call recorded in embeddings/health.py (readiness reads it)."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def embed(self, texts: list[str]) -> np.ndarray:
        try:
            vectors = self.inner.embed(texts)
        except Exception as exc:
            health.record_failure(f"{type(exc).__name__}: {exc}")
            raise
        health.record_success()
        return vectors


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
    return LocalProvider(model=model, dimensions=dimensions)
