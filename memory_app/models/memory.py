from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import HalfVectorField, HnswIndex

from memory_app.db.vectors import DIMENSIONS
from memory_app.models.tenancy import Tenant


class MemoryKind(models.TextChoices):
    EPISODIC = "episodic", "Episodic"
    SEMANTIC = "semantic", "Semantic"


class MemoryStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    SUPERSEDED = "superseded", "Superseded"
    DELETED = "deleted", "Deleted"


class Memory(models.Model):
    """A long-term memory (episodic or semantic): one table, a kind field and proxy models.

    One table because both kinds share the write path, the dedup judge and search; the kind-specific
    columns are few and nullable. Rows are never deleted by a merge or supersede: they change status
    and point at what superseded them.
    """

    # No index of its own: memory_scope_idx and memory_tenant_id_idx lead with tenant_id, and every
    # insert and status change would pay for a third copy.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memories", db_index=False)
    kind = models.CharField(max_length=16, choices=MemoryKind.choices, default=MemoryKind.EPISODIC)
    user_id = models.CharField(max_length=255, blank=True, default="")
    agent_id = models.CharField(max_length=255, blank=True, default="")
    namespace = models.CharField(max_length=255, default="default")
    session_id = models.CharField(max_length=255, blank=True, default="")

    text = models.TextField()
    text_hash = models.CharField(max_length=64, help_text="SHA-256 of the normalised text")
    # float16 (halfvec): half the bytes of float32 in the row and in the HNSW graph. Every vector is
    # rounded to float16 where it is made (db.vectors.half_precision), so the stored vector and a
    # fresh one compared with it are the same numbers; no dedup decision of the evaluation sets
    # changed (docs/SCALING.md, "Bytes per memory").
    embedding = HalfVectorField(dimensions=DIMENSIONS, null=True, blank=True)
    # Not a column: set on rows the lineage path loads without their vector (services.lineage_sql).
    has_embedding: bool
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    search_vector = models.GeneratedField(
        expression=SearchVector("text", weight="A", config="english")
        + SearchVector("context", weight="B", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    topics = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    entities = ArrayField(models.CharField(max_length=200), default=list, blank=True)

    # episodic
    event_type = models.CharField(max_length=100, blank=True, default="")
    event_date = models.DateTimeField(null=True, blank=True)
    context = models.TextField(blank=True, default="")
    # semantic
    category = models.CharField(max_length=100, blank=True, default="")
    fact_type = models.CharField(max_length=100, blank=True, default="")
    source = models.CharField(max_length=500, blank=True, default="")

    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    pinned = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=MemoryStatus.choices, default=MemoryStatus.ACTIVE)

    # ACE
    access_count = models.IntegerField(default=0)
    helpful_count = models.IntegerField(default=0)
    harmful_count = models.IntegerField(default=0)
    confidence = models.FloatField(default=0.5)

    # lineage: the memory that replaced this one (merge result or newer value)
    superseded_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="supersedes"
    )

    class Meta:
        verbose_name_plural = "memories"
        indexes = [
            # Scope selection for store-time candidates and small-scope exact search:
            # WHERE tenant_id=%s AND user_id=%s AND namespace=%s AND kind=%s AND status='active'.
            models.Index(
                fields=["tenant", "user_id", "namespace", "kind", "status"], name="memory_scope_idx"
            ),
            # Namespace-wide search (no user_id): the scope-size count and the exact scan of
            # WHERE tenant_id=%s AND namespace=%s [AND kind=%s] AND status=...
            models.Index(fields=["tenant", "namespace", "kind", "status"], name="memory_namespace_scope_idx"),
            # API listing, newest first, per tenant (cursor pagination on id).
            models.Index(fields=["tenant", "-id"], name="memory_tenant_id_idx"),
            # Approximate nearest neighbours for large scopes (cosine distance operator <=>) of
            # WHERE ... AND status = 'active'. Superseded rows are history: left out of the graph,
            # retiring a row (merge, supersede) costs no HNSW insert, and a search that asks for
            # superseded rows too is answered exactly.
            HnswIndex(
                name="memory_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["halfvec_cosine_ops"],
                condition=Q(status="active"),
            ),
            # Full-text half of hybrid search: search_vector @@ query.
            GinIndex(fields=["search_vector"], name="memory_search_gin"),
            # Topic and entity filters (&&, @>).
            GinIndex(fields=["topics"], name="memory_topics_gin"),
            GinIndex(fields=["entities"], name="memory_entities_gin"),
            # The embedding sweep: active rows stored while the provider was down, oldest first.
            models.Index(
                fields=["id"],
                name="memory_embedding_pending_idx",
                condition=Q(embedding__isnull=True, status="active"),
            ),
            # Expiry sweep: WHERE expires_at < now() AND NOT pinned.
            models.Index(
                fields=["expires_at"], name="memory_expires_idx", condition=Q(expires_at__isnull=False)
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(confidence__gte=0.0) & Q(confidence__lte=1.0), name="memory_confidence_range"
            ),
            models.CheckConstraint(condition=Q(access_count__gte=0), name="memory_access_count_nonneg"),
            models.CheckConstraint(condition=Q(helpful_count__gte=0), name="memory_helpful_count_nonneg"),
            models.CheckConstraint(condition=Q(harmful_count__gte=0), name="memory_harmful_count_nonneg"),
            models.CheckConstraint(condition=Q(kind__in=MemoryKind.values), name="memory_kind_valid"),
            models.CheckConstraint(condition=Q(status__in=MemoryStatus.values), name="memory_status_valid"),
            # Tier-1 dedup and the race of two identical stores: one active row per text in a scope.
            # text_hash second: the embedding cache's lookup of a stored text's vector by tenant
            # and normalised text, in any scope (embeddings/cache/lookup.py), reads its prefix.
            models.UniqueConstraint(
                fields=["tenant", "text_hash", "user_id", "namespace", "kind"],
                condition=Q(status="active"),
                name="memory_active_text_unique",
            ),
        ]

    def __str__(self) -> str:
        return self.text[:80]


class EpisodicManager(models.Manager["EpisodicMemory"]):
    def get_queryset(self) -> models.QuerySet[EpisodicMemory]:
        return super().get_queryset().filter(kind=MemoryKind.EPISODIC)


class SemanticManager(models.Manager["SemanticMemory"]):
    def get_queryset(self) -> models.QuerySet[SemanticMemory]:
        return super().get_queryset().filter(kind=MemoryKind.SEMANTIC)


class EpisodicMemory(Memory):
    objects: ClassVar[EpisodicManager] = EpisodicManager()

    class Meta:
        proxy = True
        verbose_name = "episodic memory"
        verbose_name_plural = "episodic memories"

    def save(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self.kind = MemoryKind.EPISODIC
        super().save(*args, **kwargs)


class SemanticMemory(Memory):
    objects: ClassVar[SemanticManager] = SemanticManager()

    class Meta:
        proxy = True
        verbose_name = "semantic memory"
        verbose_name_plural = "semantic memories"

    def save(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self.kind = MemoryKind.SEMANTIC
        super().save(*args, **kwargs)
