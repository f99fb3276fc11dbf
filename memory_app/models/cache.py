from __future__ import annotations

from django.db import models
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from memory_app.db.vectors import DIMENSIONS


class EmbeddingCacheEntry(models.Model):
    """A computed embedding, keyed by tenant, model and text digest, so no text is embedded twice.

    Private to its tenant: every lookup is scoped by `tenant`, and the digests are HMACs under a
    per-tenant key (embeddings/cache/keys.py), so neither a hit nor a digest says anything across tenants.
    `tenant` is NULL only for tenant-less tools (calibration, benchmarks).
    """

    tenant = models.ForeignKey(
        "memory_app.Tenant",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,  # the unique (tenant, model, ...) constraint leads with it
    )
    model = models.CharField(max_length=200)
    dimensions = models.IntegerField(default=384)
    content_hash = models.CharField(max_length=64, help_text="tenant-keyed HMAC of the exact text")
    normalized_hash = models.CharField(max_length=64, help_text="tenant-keyed HMAC of the normalised text")
    # The near-duplicate tier reuses only between equal skeletons (text.identity_skeleton); never indexed.
    skeleton_hash = models.CharField(
        max_length=64, blank=True, db_default="", help_text="tenant-keyed HMAC of the identity skeleton"
    )
    embedding = VectorField(dimensions=DIMENSIONS)
    # A cheap stand-in vector (local model) used to find near-duplicate texts of a remote provider.
    # Always the packaged MiniLM's (embeddings/cache/near.py): `reindex --resize` leaves it 384.
    proxy_embedding = VectorField(dimensions=DIMENSIONS, null=True, blank=True)
    # The order-aware guard of near-duplicate reuse (embeddings/cache/sketch.py); never indexed.
    surface_sketch = VectorField(dimensions=512, null=True, blank=True)
    token_count = models.IntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    last_hit_at = models.DateTimeField(null=True, blank=True)
    hit_count = models.IntegerField(default=0)

    class Meta:
        constraints = [
            # Tier 1: exact hit `WHERE tenant_id = %s AND model = %s AND content_hash = ANY(%s)`,
            # and the one row per text and tenant that a concurrent INSERT ... ON CONFLICT relies on.
            models.UniqueConstraint(
                fields=["tenant", "model", "content_hash"],
                name="embcache_tenant_hash_unique",
                nulls_distinct=False,
            ),
        ]
        indexes = [
            # Tier 2: `WHERE tenant_id = %s AND model = %s AND normalized_hash = ANY(%s)`.
            models.Index(fields=["tenant", "model", "normalized_hash"], name="embcache_tenant_norm_idx"),
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
    """Running counters per tenant and embedding model, updated with F() so concurrent workers
    never lose counts. A tenant sees its own row; service-wide figures are the sum over tenants."""

    tenant = models.ForeignKey(
        "memory_app.Tenant",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,  # the unique (tenant, model, ...) constraint leads with it
    )
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
        constraints = [
            # The flush's `UPDATE ... WHERE tenant_id = %s AND model = %s`.
            models.UniqueConstraint(
                fields=["tenant", "model"], name="embstats_tenant_model_unique", nulls_distinct=False
            )
        ]

    def __str__(self) -> str:
        return f"{self.model} (tenant {self.tenant_id})" if self.tenant_id else self.model
