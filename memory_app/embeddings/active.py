"""The embedding model whose vectors are live, per tenant, read from the database registry
(`ActiveEmbeddingModel`, written by `reindex` in the transaction that switches the vectors).

Cached per process for ACTIVE_MODEL_CACHE_SECONDS, so a running web server or worker follows a switch
within that time without a restart, at the cost of one small query per tenant per interval. The
store labels each vector with the model that made it and the search compares a query only with rows
of the model that embedded it, so during a reindex (old model live, new vectors in the side table)
and after the switch, no search mixes two models' spaces.

The vector columns' width (`vector_dimensions`) is read with the registry and cached with it: a
`reindex --resize` changes both in one transaction, so a process sees the new model and the new
width together.
"""

from __future__ import annotations

import threading
import time

from memory_app.conf import embeddings_config
from memory_app.db.vectors import DIMENSIONS, vector_column_dimensions
from memory_app.models import ActiveEmbeddingModel, Memory

# Long enough to cost nothing per request, short enough that a switch is followed within seconds.
ACTIVE_MODEL_CACHE_SECONDS = 5.0

_lock = threading.Lock()
# (tenant id or None → model, the vector columns' width, expiry): the whole registry, one row per
# tenant that switched alone and one global row, read in one query, and the width in another.
_cache: tuple[dict[int | None, str], int, float] | None = None
# The width last read, for readers that must not query (readiness, with the database perhaps down).
_seen_dimensions: int | None = None


def _registry() -> tuple[dict[int | None, str], int]:
    global _cache, _seen_dimensions
    now = time.monotonic()
    cached = _cache
    if cached is not None and cached[2] > now:
        return cached[0], cached[1]
    rows: dict[int | None, str] = {}
    for owner, name in ActiveEmbeddingModel.objects.values_list("tenant_id", "model"):
        rows[owner] = name
    # Every vector column holding the model's vectors is resized together; the memory table's is read.
    dimensions = vector_column_dimensions(Memory._meta.db_table, "embedding") or DIMENSIONS
    with _lock:
        _cache = (rows, dimensions, now + ACTIVE_MODEL_CACHE_SECONDS)
        _seen_dimensions = dimensions
    return rows, dimensions


def active_model(tenant_id: int | None) -> str:
    """The tenant's row, else the global row, else the EMBEDDING_MODEL setting."""
    rows, _ = _registry()
    return rows.get(tenant_id) or rows.get(None) or str(embeddings_config().model)


def vector_dimensions() -> int:
    """The width of the vector columns that hold the model's vectors, as the database has it (cached
    with the registry): what every vector written or compared must have."""
    return _registry()[1]


def vector_dimensions_seen() -> int | None:
    """The width this process last read, without a query (None before the first read)."""
    return _seen_dimensions


def active_model_forget() -> None:
    """Drop this process's cache (after a switch made here, and in tests)."""
    global _cache
    with _lock:
        _cache = None
