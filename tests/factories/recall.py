"""Memories with real embeddings of the local model, for search and context tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from memory_app.embeddings import embed_texts
from memory_app.models import Memory, Tenant
from memory_app.services.rows.memories import memory_insert


def remember(tenant: Tenant, text: str, *, age_days: float = 0.0, **fields: Any) -> Memory:
    """One stored memory embedded with the configured model, optionally backdated."""
    fields.setdefault("user_id", "user-1")
    created = timezone.now() - timedelta(days=age_days)
    return memory_insert(
        tenant=tenant, text=text, embedding=embed_texts([text], tenant=None)[0], created_at=created, **fields
    )
