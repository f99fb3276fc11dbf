from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import VectorField

from memory_app.db.vectors import DIMENSIONS
from memory_app.models.tenancy import Tenant


class Procedure(models.Model):
    """A learned tool sequence for a normalised query pattern, with running averages."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="procedures")
    user_id = models.CharField(max_length=255, blank=True, default="")
    pattern = models.TextField(help_text="normalised query pattern")
    pattern_hash = models.CharField(max_length=64)
    pattern_embedding = VectorField(dimensions=DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    tool_sequence = models.JSONField(default=list)
    execution_count = models.IntegerField(default=0)
    avg_execution_time_ms = models.FloatField(default=0.0)
    avg_success_score = models.FloatField(default=0.0)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # Exact-pattern lookup and the upsert of `record`.
            models.UniqueConstraint(
                fields=["tenant", "user_id", "pattern_hash"], name="procedure_pattern_unique"
            ),
            models.CheckConstraint(condition=Q(execution_count__gte=0), name="procedure_count_nonneg"),
            models.CheckConstraint(
                condition=Q(avg_success_score__gte=0.0) & Q(avg_success_score__lte=1.0),
                name="procedure_success_range",
            ),
            models.CheckConstraint(condition=Q(avg_execution_time_ms__gte=0.0), name="procedure_time_nonneg"),
        ]

    def __str__(self) -> str:
        return self.pattern[:80]
