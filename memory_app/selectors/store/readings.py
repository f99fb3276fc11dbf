"""Token rows (models.MemoryTokens) whose fact reading is not one of the current rules."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import QuerySet

from memory_app.judge.facts import READING_VERSION
from memory_app.models import MemoryTokens, Tenant
from memory_app.selectors.store import id_batches


def _unread(tenant: Tenant | None) -> QuerySet[MemoryTokens]:
    # Rows written without a reading (before migration 0022, or loaded by COPY), or kept by rules
    # of another version: every reader ignores those and reads the text again. A memory without a
    # token row gets one, with its reading, from `reindex --tokens`.
    scope = MemoryTokens.objects.all() if tenant is None else MemoryTokens.objects.filter(tenant=tenant)
    return scope.exclude(fact_reading__startswith=f"{READING_VERSION}\t")


def memory_readings_missing(
    *, tenant: Tenant | None, batch_size: int
) -> Iterator[list[tuple[int, int, str]]]:
    """Batches of (memory id, tenant_id, text) of such rows, in id order."""
    return id_batches(_unread(tenant), ("pk", "tenant_id", "memory__text"), batch_size=batch_size)


def memory_readings_missing_count(*, tenant: Tenant | None) -> int:
    return _unread(tenant).count()
