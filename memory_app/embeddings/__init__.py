"""The one entry point for turning text into vectors: `embed_texts`.

Callers get L2-normalised float32 rows in input order, holding float16 values (the precision the
memory table stores, db.vectors.half_precision); which provider and cache tiers serve them is this
package's business (see docs/ARCHITECTURE.md, "Embeddings").
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from memory_app.conf import embeddings_config
from memory_app.db.vectors import half_precision
from memory_app.embeddings.active import active_model, vector_dimensions
from memory_app.embeddings.breaker import provider_embed
from memory_app.embeddings.cache.lookup import cached_embed_begin
from memory_app.embeddings.cache.stats import BatchCounts, stats_record
from memory_app.embeddings.local import model_dimensions, model_fits
from memory_app.embeddings.providers import get_provider, starts_beside
from memory_app.embeddings.tokens import count_tokens
from memory_app.errors import ApplicationError

if TYPE_CHECKING:
    from memory_app.models import Tenant


def embedding_model_name(tenant: Tenant | None = None) -> str:
    """The live model of `tenant` (embeddings/active.py: the registry `reindex` writes, else the
    setting); every stored vector is tagged with the model that made it, and they never mix."""
    return active_model(tenant.pk if tenant is not None else None)


def query_embedding_starts_beside(tenant: Tenant) -> bool:
    """Whether `embed_texts_begin` of a search's query returns at once, its vector computed on
    another thread while the caller goes on (providers.starts_beside), rather than after it. A
    provider that cannot be built says no here: starting the embedding then fails, and the search
    degrades to full text as it would have."""
    try:
        return starts_beside(get_provider(embedding_model_name(tenant)))
    except Exception:
        return False


def configured_model_name() -> str:
    """EMBEDDING_MODEL of this process: the model a `reindex` moves to."""
    return str(embeddings_config().model)


def model_width(model: str) -> int:
    """The width of the vectors `model` gives under this process's provider: a local model's own,
    read from the model; the OpenAI models are asked for the vector columns' width."""
    if embeddings_config().provider == "local":
        return model_dimensions(model)
    return vector_dimensions()


class EmbeddingJob(Protocol):
    """An embed call that may still be running (`embed_texts_begin`)."""

    def vectors(self) -> np.ndarray:
        """The rows in input order; waits for the provider, raises its error."""
        ...

    def finish(self, *, held: Collection[str] = ()) -> np.ndarray:
        """`vectors()`, then the cache rows and statistics written (once). `held`: texts whose
        vectors a memory row now keeps (the store path's inserts), given no cache row of their own."""
        ...


@dataclass
class _HalfPrecision:
    """`inner`'s rows rounded to float16: a query or a new memory is compared with stored vectors in
    the numbers they were stored in, whichever tier (provider, cache) answered."""

    inner: EmbeddingJob

    def vectors(self) -> np.ndarray:
        return half_precision(self.inner.vectors())

    def finish(self, *, held: Collection[str] = ()) -> np.ndarray:
        return half_precision(self.inner.finish(held=held))


@dataclass
class _Ready:
    rows: np.ndarray

    def vectors(self) -> np.ndarray:
        return self.rows

    def finish(self, *, held: Collection[str] = ()) -> np.ndarray:
        return self.rows


def embed_texts(texts: Sequence[str], *, tenant: Tenant | None, model: str | None = None) -> np.ndarray:
    """n x vector_dimensions() float32 (of float16 values), L2-normalised, in input order; the cache
    is applied per text.

    `tenant`: whose private cache serves and keeps these texts (None only for tenant-less tools:
    calibration, evaluation, benchmarks; they share a cache partition of their own).

    Raises ApplicationError only when the provider itself fails (after its retries); a broken
    cache costs a warning and a provider call, never an error.
    """
    return embed_texts_begin(texts, tenant=tenant, model=model).finish()


def embed_texts_begin(
    texts: Sequence[str], *, tenant: Tenant | None, model: str | None = None, query: bool = False
) -> EmbeddingJob:
    """`embed_texts` in two steps: the cache is read now and the local model started on its batcher's
    thread, so the caller can do other work (a search reads full text) before it asks the returned
    job for `vectors()`; `finish()` also writes the cache rows, and a caller inside a read-only
    transaction may call it after that transaction. Another provider answers before this returns.
    `query`: a search's query, which waits for its vector; a local model's is not looked up in the
    cache (`cached_embed_begin`)."""
    return _HalfPrecision(_embed_texts_begin(texts, tenant=tenant, model=model, query=query))


def _embed_texts_begin(
    texts: Sequence[str], *, tenant: Tenant | None, model: str | None = None, query: bool = False
) -> EmbeddingJob:
    """The job before its rows are rounded (embed_texts_begin)."""
    items = list(texts)
    bad = [i for i, text in enumerate(items) if not isinstance(text, str)]
    if bad:
        raise ApplicationError(
            f"embed_texts needs strings; item {bad[0]} is {type(items[bad[0]]).__name__}",
            code="invalid_embedding_input",
        )
    # `model`: a reindex building the next vectors; otherwise the tenant's live model, or for the
    # tenant-less tools (calibration, evaluation) this process's EMBEDDING_MODEL.
    if model is None:
        model = embedding_model_name(tenant) if tenant is not None else configured_model_name()
    provider = get_provider(model)
    if tenant is not None:
        # Vectors for a tenant's rows or queries: the model must fit the vector columns (a local
        # model has its own width). The tenant-less tools (calibration, evaluation) need no table.
        model_fits(provider.model, provider.dimensions, vector_dimensions())
    if not items:
        return _Ready(np.zeros((0, provider.dimensions), dtype=np.float32))
    if embeddings_config().cache_enabled:
        return cached_embed_begin(
            items, provider, tenant_id=tenant.pk if tenant is not None else None, query=query
        )
    vectors = provider_embed(provider, items)
    stats_record(
        model=provider.model,
        counts=BatchCounts(
            misses=len(items),
            provider_calls=provider.requests_for(items),
            tokens_embedded=sum(count_tokens(text, provider.model) for text in items),
        ),
        hit_entry_ids=[],
        tenant_id=tenant.pk if tenant is not None else None,
    )
    return _Ready(vectors)


def embed_text(text: str, *, tenant: Tenant | None) -> np.ndarray:
    return embed_texts([text], tenant=tenant)[0]
