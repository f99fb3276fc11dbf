from __future__ import annotations

from django.db import models
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField


class EmbeddingCacheEntry(models.Model):
    """A computed embedding, keyed by model and content hash, so no text is embedded twice."""

    model = models.CharField(max_length=200)
    dimensions = models.IntegerField(default=384)
    content_hash = models.CharField(max_length=64, help_text="SHA-256 of the exact text")
    normalized_hash = models.CharField(max_length=64, help_text="SHA-256 of the normalised text")
    embedding = VectorField(dimensions=384)
    # A cheap stand-in vector (local model) used to find near-duplicate texts of a remote provider.
    proxy_embedding = VectorField(dimensions=384, null=True, blank=True)
    # The order-aware guard of near-duplicate reuse (embeddings/sketch.py); never indexed.
    surface_sketch = VectorField(dimensions=512, null=True, blank=True)
    token_count = models.IntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    last_hit_at = models.DateTimeField(null=True, blank=True)
    hit_count = models.IntegerField(default=0)

    class Meta:
        constraints = [
            # Tier 1: exact hit `WHERE model=%s AND content_hash=%s`.
            models.UniqueConstraint(fields=["model", "content_hash"], name="embcache_model_hash_unique"),
        ]
        indexes = [
            # Tier 2: normalised-text hit.
            models.Index(fields=["model", "normalized_hash"], name="embcache_model_norm_idx"),
            # Tier 3: near-duplicate reuse by the proxy vector.
            HnswIndex(
                name="embcache_proxy_hnsw",
                fields=["proxy_embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model}:{self.content_hash[:12]}"


class EmbeddingCacheStats(models.Model):
    """Running counters per embedding model, updated with F() so concurrent workers never lose counts."""

    model = models.CharField(max_length=200)
    exact_hits = models.BigIntegerField(default=0)
    normalized_hits = models.BigIntegerField(default=0)
    near_hits = models.BigIntegerField(default=0)
    misses = models.BigIntegerField(default=0)
    provider_calls = models.BigIntegerField(default=0)
    tokens_embedded = models.BigIntegerField(default=0)
    tokens_avoided = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "embedding cache stats"
        constraints = [models.UniqueConstraint(fields=["model"], name="embstats_model_unique")]

    def __str__(self) -> str:
        return self.model
