"""The provider interface and the choice of provider from settings.

A provider turns texts into L2-normalised float32 rows of `dimensions` columns, in input order,
batching as it needs. It knows nothing about the cache: `embed_texts` puts the cache in front.
"""

from __future__ import annotations

import threading
from typing import Protocol

import numpy as np
from django.conf import settings

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
        if settings.EMBEDDING_LOCAL_BATCHING:  # one forward pass for concurrent requests
            return np.asarray(local_batcher().embed(texts))
        return local_embed(texts)

    def requests_for(self, texts: list[str]) -> int:
        return 1 if texts else 0


_lock = threading.Lock()
_providers: dict[tuple, EmbeddingProvider] = {}


def _settings_key() -> tuple:
    return (
        settings.EMBEDDING_PROVIDER,
        settings.EMBEDDING_MODEL,
        DIMENSIONS,
        settings.OPENAI_API_KEY,
        settings.OPENAI_BASE_URL,
        settings.OPENAI_EMBEDDING_TIMEOUT_SECONDS,
        settings.OPENAI_EMBEDDING_BATCH_SIZE,
        settings.OPENAI_EMBEDDING_MAX_TOKENS_PER_REQUEST,
        settings.OPENAI_EMBEDDING_MAX_RETRIES,
        settings.OPENAI_EMBEDDING_BACKOFF_SECONDS,
    )


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


def _build(key: tuple) -> EmbeddingProvider:
    return _Recorded(_build_inner(key))  # type: ignore[return-value]


def _build_inner(key: tuple) -> EmbeddingProvider:
    name, model, dimensions = key[0], key[1], key[2]
    if name == "openai":
        # start-up cost: openai only for the remote provider
        from memory_app.embeddings.openai_provider import OpenAIProvider

        return OpenAIProvider(
            model=model,
            dimensions=dimensions,
            api_key=settings.OPENAI_API_KEY,
            base_url=settings.OPENAI_BASE_URL or None,
            timeout=settings.OPENAI_EMBEDDING_TIMEOUT_SECONDS,
            batch_size=settings.OPENAI_EMBEDDING_BATCH_SIZE,
            max_tokens_per_request=settings.OPENAI_EMBEDDING_MAX_TOKENS_PER_REQUEST,
            max_retries=settings.OPENAI_EMBEDDING_MAX_RETRIES,
            backoff_seconds=settings.OPENAI_EMBEDDING_BACKOFF_SECONDS,
        )
    return LocalProvider(model=model, dimensions=dimensions)
