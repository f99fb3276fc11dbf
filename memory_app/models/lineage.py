from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from memory_app.models.memory import Memory
from memory_app.models.tenancy import Tenant


class ChangeOperation(models.TextChoices):
    MERGE = "merge", "Merge"
    SUPERSEDE = "supersede", "Supersede"
    # An erased user's lines removed from this memory's context (services/store/quotes.py); the
    # change counts them and quotes nothing, and cannot be undone.
    REDACT = "redact", "Redaction"


class ChangeRelation(models.TextChoices):
    DUPLICATE = "duplicate", "Duplicate"
    REFINE = "refine", "Refine"
    UPDATE = "update", "Update"
    MANUAL = "manual", "Manual"


class ActorType(models.TextChoices):
    SYSTEM = "system", "System"
    LLM = "llm", "LLM"
    USER = "user", "Staff user"


class MemoryChange(models.Model):
    """One merge, supersede or redaction: which memories went in, which came out, who decided, and
    undo state."""

    # Indexed by change_tenant_created_idx (tenant first), not by an FK index of its own.
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="memory_changes", db_index=False
    )
    operation = models.CharField(max_length=16, choices=ChangeOperation.choices)
    relation = models.CharField(max_length=16, choices=ChangeRelation.choices)
    result = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="produced_by")
    actor_type = models.CharField(max_length=16, choices=ActorType.choices, default=ActorType.SYSTEM)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    reason = models.TextField(blank=True, default="")
    confidence = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        indexes = [
            # Change history per tenant, newest first (admin dashboard, API).
            models.Index(fields=["tenant", "-created_at"], name="change_tenant_created_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | (Q(confidence__gte=0.0) & Q(confidence__lte=1.0)),
                name="change_confidence_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.operation} #{self.pk} → memory {self.result_id}"

    @property
    def is_undone(self) -> bool:
        return self.undone_at is not None


class MemoryChangeSource(models.Model):
    """A memory that went into a change, with a snapshot of its row so undo restores it exactly."""

    # Indexed by changesource_change_memory_unique (change first) and changesource_memory_idx, not by
    # FK indexes of their own (the memory one was an exact copy).
    change = models.ForeignKey(MemoryChange, on_delete=models.CASCADE, related_name="sources", db_index=False)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="source_of", db_index=False)
    snapshot = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["change", "memory"], name="changesource_change_memory_unique"),
        ]
        indexes = [
            # Lineage of one memory: which changes consumed it.
            models.Index(fields=["memory"], name="changesource_memory_idx"),
        ]

    def __str__(self) -> str:
        return f"memory {self.memory_id} in change {self.change_id}"
