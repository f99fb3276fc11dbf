from __future__ import annotations

from django.db import models
from django.utils import timezone
from pgvector.django import VectorField

from memory_app.db.vectors import DIMENSIONS
from memory_app.models.tenancy import Tenant


class JobKind(models.TextChoices):
    COMPACTION = "compaction", "Compaction"
    REINDEX = "reindex", "Reindex"
    EXPIRY = "expiry", "Expiry"
    REVIEW_DETECTION = "review_detection", "Review-queue detection"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class MaintenanceJob(models.Model):
    """A long background run with a cursor, so an interrupted job resumes where it stopped."""

    kind = models.CharField(max_length=32, choices=JobKind.choices)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, null=True, blank=True, related_name="jobs")
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    cursor = models.JSONField(default=dict, blank=True)
    stats = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # host:pid:nonce of the run that claimed the job; a run whose job was taken over (its heartbeat
    # went stale) sees another value here and stops instead of writing over the new run's cursor.
    claimed_by = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        indexes = [
            # "Is a job of this kind already running for this tenant?" and the admin list.
            models.Index(fields=["kind", "status", "-created_at"], name="job_kind_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"


class ReindexVector(models.Model):
    """A memory's vector under the model a `reindex` is moving to, built beside the live one.

    A side table rather than a second vector column on Memory: the live rows, their snapshots, the
    admin and every selector stay untouched while a reindex runs, searches keep using the live
    `embedding`, and the switch is one UPDATE ... FROM this table at the end. Rows already built
    survive an interruption, so a rerun resumes.
    """

    memory = models.OneToOneField(
        "memory_app.Memory", on_delete=models.CASCADE, primary_key=True, related_name="reindex_next"
    )
    embedding = VectorField(dimensions=DIMENSIONS)
    model = models.CharField(max_length=200)
    text_hash = models.CharField(max_length=64, help_text="the text the vector was built from")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            # The switch and the resume check: WHERE model = %s.
            models.Index(fields=["model"], name="reindexvector_model_idx"),
        ]

    def __str__(self) -> str:
        return f"next vector of memory {self.memory_id} ({self.model})"


class ActiveEmbeddingModel(models.Model):
    """Which embedding model's vectors are live: for one tenant, or (tenant null) for every tenant
    without a row of its own. `reindex` writes it in the transaction that switches the vectors, and
    every process reads it (cached a few seconds, embeddings/active.py), so queries and stores follow
    the switch without a restart. No row: the EMBEDDING_MODEL setting."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    model = models.CharField(max_length=500)
    switched_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # Serves the lookup `WHERE tenant_id = %s OR tenant_id IS NULL`; one global row at most.
            models.UniqueConstraint(
                fields=["tenant"], name="activemodel_tenant_unique", nulls_distinct=False
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model} ({self.tenant or 'every tenant'})"
