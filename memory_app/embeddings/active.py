"""The embedding model whose vectors are live, per tenant, read from the database registry
(`ActiveEmbeddingModel`, written by `reindex` in the transaction that switches the vectors).

Cached per process for ACTIVE_MODEL_CACHE_SECONDS, so a running web server or worker follows a switch
within that time without a restart, at the cost of one small query per tenant per interval. The
store labels each vector with the model that made it and the search compares a query only with rows
of the model that embedded it, so during a reindex (old model live, new vectors in the side table)
and after the switch, no search mixes two models' spaces.
"""

from __future__ import annotations

import threading
import time

from memory_app.conf import embeddings_config
from memory_app.models import ActiveEmbeddingModel

# Long enough to cost nothing per request, short enough that a switch is followed within seconds.
ACTIVE_MODEL_CACHE_SECONDS = 5.0

_lock = threading.Lock()
# (tenant id or None → model, expiry): the whole registry, one row per tenant that switched alone
# and one global row, read in one query.
_cache: tuple[dict[int | None, str], float] | None = None


def _registry() -> dict[int | None, str]:
    global _cache
    now = time.monotonic()
    cached = _cache
    if cached is not None and cached[1] > now:
        return cached[0]
    rows: dict[int | None, str] = {}
    for owner, name in ActiveEmbeddingModel.objects.values_list("tenant_id", "model"):
        rows[owner] = name
    with _lock:
        _cache = (rows, now + ACTIVE_MODEL_CACHE_SECONDS)
    return rows


def active_model(tenant_id: int | None) -> str:
    """The tenant's row, else the global row, else the EMBEDDING_MODEL setting."""
    rows = _registry()
    return rows.get(tenant_id) or rows.get(None) or str(embeddings_config().model)


def active_model_forget() -> None:
    """Drop this process's cache (after a switch made here, and in tests)."""
    global _cache
    with _lock:
        _cache = None
