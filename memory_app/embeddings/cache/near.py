"""Tier 3 of the embedding cache: reuse the embedding of a near-identical cached text.

Similarity comes from signals much cheaper than the provider (a network round trip and a bill):
the local MiniLM model as a proxy, and an order-aware surface sketch (sketch.py). A text reuses
the provider embedding of its nearest cached text when the proxy cosine is >=
SEMANTIC_DEDUP_THRESHOLD and the sketch cosine is >= EMBEDDING_NEAR_DUP_SURFACE_MIN: the first
says "means the same", the second "is the same text up to small edits" (MiniLM alone would reuse
across swapped words). With the local model as the provider the proxy would cost exactly what it
saves, so the tier is off by default there (EMBEDDING_NEAR_DUP=auto).

The lookup is one query for a whole batch: a LATERAL nearest-neighbour scan of the HNSW index
`embcache_proxy_hnsw` with LIMIT 1 per text; the threshold is applied to the returned score, never
inside the query (inside, an unsatisfiable threshold makes HNSW visit thousands of tuples).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import numpy as np

from memory_app.conf import embeddings_config
from memory_app.db import (
    fetch_all_with,
    hnsw_settings,
    index_valid,
    vector_literal,
)
from memory_app.embeddings.cache.stats import CACHE_ERRORS
from memory_app.embeddings.local import local_embed
from memory_app.models import EmbeddingCacheEntry

logger = logging.getLogger(__name__)
INDEX_NAME = "embcache_proxy_hnsw"
INDEX_CHECK_SECONDS = 60.0


@dataclass(frozen=True)
class NearMatch:
    entry_id: int
    content_hash: str
    skeleton_hash: str
    embedding: np.ndarray
    score: float
    sketch: np.ndarray | None


def near_reuse(*, proxy_score: float, surface_score: float) -> bool:
    """The reuse rule, the one place it is written (the benchmark measures this function)."""
    return (
        proxy_score >= embeddings_config().near_dup_threshold
        and surface_score >= embeddings_config().near_dup_surface_min
    )


def near_dup_enabled(*, provider_is_remote: bool) -> bool:
    mode = embeddings_config().near_dup
    return mode == "on" or (mode == "auto" and provider_is_remote)


def proxy_vectors(texts: list[str]) -> np.ndarray:
    return local_embed(texts)


class _IndexState:
    """Whether the HNSW index is usable, rechecked every minute; one warning per outage."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.usable: bool | None = None
        self.checked_at = 0.0

    def check(self) -> bool:
        now = time.monotonic()
        if self.usable is not None and now - self.checked_at < INDEX_CHECK_SECONDS:
            return self.usable
        try:
            usable, reason = bool(index_valid(INDEX_NAME)), "missing or invalid"
        except CACHE_ERRORS as exc:
            usable, reason = False, str(exc)
        self.set(usable, reason)
        return usable

    def set(self, usable: bool, reason: str = "") -> None:
        with self.lock:
            if self.usable is not False and not usable:
                logger.warning(
                    "embedding cache: near-duplicate index %s unusable (%s); using the hash tiers only",
                    INDEX_NAME,
                    reason,
                )
            elif self.usable is False and usable:
                logger.info("embedding cache: near-duplicate index %s usable again", INDEX_NAME)
            self.usable = usable
            self.checked_at = time.monotonic()

    def reset(self) -> None:
        with self.lock:
            self.usable, self.checked_at = None, 0.0


index_state = _IndexState()


def _lateral_sql(tenant_id: int | None) -> str:
    table = EmbeddingCacheEntry._meta.db_table
    # The tenant filter rides on the HNSW scan (iterative relaxed_order keeps scanning until a row
    # of this tenant is found), so no other tenant's row is ever a candidate.
    tenant_sql = "e.tenant_id IS NULL" if tenant_id is None else "e.tenant_id = %s"
    return (
        "SELECT q.ord, n.id, n.content_hash, n.skeleton_hash, n.embedding::real[],"
        " n.surface_sketch::real[], n.distance "
        "FROM unnest(%s::vector[]) WITH ORDINALITY AS q(v, ord) "
        "CROSS JOIN LATERAL ("
        "  SELECT e.id, e.content_hash, e.skeleton_hash, e.embedding, e.surface_sketch,"
        f"  e.proxy_embedding <=> q.v AS distance FROM {table} e"
        f"   WHERE {tenant_sql} AND e.model = %s AND e.proxy_embedding IS NOT NULL"
        "   ORDER BY e.proxy_embedding <=> q.v LIMIT 1"
        ") AS n"
    )


def near_lookup(
    *, model: str, proxies: np.ndarray, restore: bool = True, tenant_id: int | None = None
) -> list[NearMatch | None]:
    """The nearest cached text per proxy row (None when the cache has none); raises DatabaseError.

    The HNSW settings are SET LOCAL. In a transaction of its own (`restore=False`) they die with
    it; inside the caller's they are rolled back with a savepoint afterwards, so the caller's own
    queries keep their settings.
    """
    found: list[NearMatch | None] = [None] * len(proxies)
    if not len(proxies):
        return found
    literals = [vector_literal(row) for row in proxies]
    tenant_args = [] if tenant_id is None else [tenant_id]
    settings = hnsw_settings(ef_search=embeddings_config().near_dup_ef_search)
    rows = fetch_all_with(settings, _lateral_sql(tenant_id), [literals, *tenant_args, model], isolate=restore)
    for ordinal, entry_id, chash, skeleton, embedding, sketch, distance in rows:
        vector = np.asarray(embedding, dtype=np.float32)
        guard = np.asarray(sketch, dtype=np.float32) if sketch is not None else None
        found[ordinal - 1] = NearMatch(entry_id, chash, skeleton, vector, 1.0 - float(distance), guard)
    return found
