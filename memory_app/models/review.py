from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from memory_app.models.lineage import MemoryChange
from memory_app.models.memory import Memory
from memory_app.models.tenancy import Tenant


class ClusterStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    MERGED = "merged", "Merged"
    KEPT_APART = "kept_apart", "Kept apart"
    SPLIT = "split", "Split"
    SUPERSEDED = "superseded", "Marked as update"


class ClusterOrigin(models.TextChoices):
    STORE = "store", "Store-time dedup"
    COMPACTION = "compaction", "Background compaction"
    MANUAL = "manual", "Manual"


class DuplicateCluster(models.Model):
    """A group of memories that may say the same thing, waiting for (or resolved by) a reviewer."""

    # Indexed by cluster_queue_idx (tenant first), not by an FK index of its own.
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="duplicate_clusters", db_index=False
    )
    user_id = models.CharField(max_length=255, blank=True, default="")
    namespace = models.CharField(max_length=255, default="default")
    kind = models.CharField(max_length=16, default="episodic")
    status = models.CharField(max_length=16, choices=ClusterStatus.choices, default=ClusterStatus.PENDING)
    origin = models.CharField(max_length=16, choices=ClusterOrigin.choices, default=ClusterOrigin.STORE)
    verdict = models.CharField(max_length=16, blank=True, default="", help_text="the judge's relation")
    confidence = models.FloatField(null=True, blank=True)
    max_distance = models.FloatField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    changes = models.ManyToManyField(MemoryChange, blank=True, related_name="clusters")

    class Meta:
        indexes = [
            # The review queue: pending clusters of a tenant ordered by confidence.
            models.Index(fields=["tenant", "status", "-confidence"], name="cluster_queue_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | (Q(confidence__gte=0.0) & Q(confidence__lte=1.0)),
                name="cluster_confidence_range",
            ),
        ]

    def __str__(self) -> str:
        return f"cluster #{self.pk} ({self.status})"


class ClusterMember(models.Model):
    # Indexed by clustermember_unique (cluster first) and clustermember_memory_idx, not by FK indexes
    # of their own (the memory one was an exact copy).
    cluster = models.ForeignKey(
        DuplicateCluster, on_delete=models.CASCADE, related_name="members", db_index=False
    )
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="cluster_memberships", db_index=False
    )
    distance = models.FloatField(
        null=True, blank=True, help_text="cosine distance to the cluster's first member"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "memory"], name="clustermember_unique"),
        ]
        indexes = [
            # "Is this memory already queued?" checks before queuing a new cluster.
            models.Index(fields=["memory"], name="clustermember_memory_idx"),
        ]

    def __str__(self) -> str:
        return f"memory {self.memory_id} in cluster {self.cluster_id}"


# A cluster's verdict when its texts differ in a sign, number, name or negation (its reason names
# the difference): no confidence, and bulk merge refuses it.
DIFFERS = "differs"


class KeptApartPair(models.Model):
    """Two memories a reviewer declared different: never suggested as duplicates again."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="kept_apart_pairs")
    # Indexed by keptapart_pair_unique (memory_low first), not by an FK index of its own.
    memory_low = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+", db_index=False)
    memory_high = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            # One row per unordered pair; lookups go (low, high).
            models.UniqueConstraint(fields=["memory_low", "memory_high"], name="keptapart_pair_unique"),
            models.CheckConstraint(condition=Q(memory_low__lt=F("memory_high")), name="keptapart_ordered"),
        ]

    def __str__(self) -> str:
        return f"{self.memory_low_id} ≠ {self.memory_high_id}"
