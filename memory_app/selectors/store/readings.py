"""Memories whose token row (models.MemoryTokens) holds no fact reading of the current rules."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Exists, OuterRef, QuerySet

from memory_app.judge.facts import READING_VERSION
from memory_app.models import Memory, MemoryTokens, Tenant
from memory_app.selectors.store import id_batches


def _unread(tenant: Tenant | None) -> QuerySet[Memory]:
    # Rows written without a reading (before migration 0022, or loaded by COPY), or kept by rules
    # of another version: every reader ignores those and reads the text again. A memory without a
    # token row gets one, with its reading, from `reindex --tokens`. The tenant is in the
    # correlation so that on Citus the two tables meet on each tenant's shard.
    unread = MemoryTokens.objects.filter(tenant=OuterRef("tenant"), memory=OuterRef("pk")).exclude(
        fact_reading__startswith=f"{READING_VERSION}\t"
    )
    scope = Memory.objects.all() if tenant is None else Memory.objects.filter(tenant=tenant)
    return scope.filter(Exists(unread))


def memory_readings_missing(
    *, tenant: Tenant | None, batch_size: int
) -> Iterator[list[tuple[int, int, str]]]:
    """Batches of (memory id, tenant_id, text) of such memories, in id order."""
    return id_batches(_unread(tenant), ("pk", "tenant_id", "text"), batch_size=batch_size)


def memory_readings_missing_count(*, tenant: Tenant | None) -> int:
    return _unread(tenant).count()
