"""Embedding-cache statistics, per model.

Service-wide by design, like the health report: the cache is shared by all tenants (it is keyed by
model and text hash, and holds no tenant data beyond the vectors themselves), so its counters are
too. They are aggregate counts only. Counts of the last few seconds may still be pending in a
worker (see embeddings/stats.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count

from memory_app.embeddings.stats import COUNTER_FIELDS
from memory_app.models import EmbeddingCacheEntry, EmbeddingCacheStats


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


def embedding_stats(*, model: str | None = None) -> list[EmbeddingModelStats]:
    """One row per model that has counters or cache entries, ordered by model name."""
    stats = EmbeddingCacheStats.objects.all()
    entries = EmbeddingCacheEntry.objects.values("model").annotate(n=Count("id"))
    if model:
        stats, entries = stats.filter(model=model), entries.filter(model=model)
    by_model = {row.model: row for row in stats}
    sizes = {row["model"]: row["n"] for row in entries}
    price = settings.EMBEDDING_PRICE_PER_1K_TOKENS
    out = []
    for name in sorted(set(by_model) | set(sizes)):
        row = by_model.get(name)
        counts = {f: int(getattr(row, f)) if row else 0 for f in COUNTER_FIELDS}
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
                updated_at=row.updated_at.isoformat() if row else None,
            )
        )
    return out
