"""Embedding-cache statistics, per model: one tenant's own, or service-wide.

The cache is private per tenant, and so are its counters: a tenant's hit counts would otherwise
tell it whether another tenant stored or searched a text. The API shows a tenant its own rows
only; the service-wide sums (every tenant plus the tenant-less tools) are for staff (admin
dashboard) and the `embedding_stats` / `memory_stats` commands. Counts of the last few seconds may
still be pending in a worker (see embeddings/cache/stats.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from django.db.models import Count, Max, Sum

from memory_app.conf import embeddings_config
from memory_app.embeddings.cache.stats import COUNTER_FIELDS
from memory_app.models import EmbeddingCacheEntry, EmbeddingCacheStats, Tenant


@dataclass(frozen=True)
class EmbeddingModelStats:
    model: str
    exact_hits: int
    normalized_hits: int
    near_hits: int
    misses: int
    provider_calls: int
    tokens_embedded: int
    tokens_avoided: int
    lookups: int
    hit_rate: float
    estimated_cost_saved: float
    price_per_1k_tokens: float
    cache_entries: int
    updated_at: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def embedding_stats(*, tenant: Tenant | None, model: str | None = None) -> list[EmbeddingModelStats]:
    """One row per model that has counters or cache entries, ordered by model name: `tenant`'s
    own, or with `tenant=None` the service-wide sums (staff and commands only)."""
    stats = EmbeddingCacheStats.objects.all()
    entries = EmbeddingCacheEntry.objects.all()
    if tenant is not None:
        stats, entries = stats.filter(tenant=tenant), entries.filter(tenant=tenant)
    if model:
        stats, entries = stats.filter(model=model), entries.filter(model=model)
    sums = {name: Sum(name) for name in COUNTER_FIELDS}
    rows = stats.values("model").annotate(**sums, last_updated=Max("updated_at"))
    by_model: dict[str, Mapping[str, Any]] = {row["model"]: row for row in rows}
    sizes = {row["model"]: row["n"] for row in entries.values("model").annotate(n=Count("id"))}
    price = embeddings_config().price_per_1k_tokens
    out = []
    for name in sorted(set(by_model) | set(sizes)):
        row = by_model.get(name)
        counts = {f: int(row[f] or 0) if row else 0 for f in COUNTER_FIELDS}
        hits = counts["exact_hits"] + counts["normalized_hits"] + counts["near_hits"]
        lookups = hits + counts["misses"]
        out.append(
            EmbeddingModelStats(
                model=name,
                **counts,
                lookups=lookups,
                hit_rate=round(hits / lookups, 4) if lookups else 0.0,
                estimated_cost_saved=round(counts["tokens_avoided"] / 1000 * price, 6),
                price_per_1k_tokens=price,
                cache_entries=sizes.get(name, 0),
                updated_at=row["last_updated"].isoformat() if row and row["last_updated"] else None,
            )
        )
    return out
