"""Memories with real embeddings (the local model), for tests that search."""

from __future__ import annotations

from typing import Any

from memory_app.embeddings import embed_texts
from memory_app.models import Memory, Tenant
from memory_app.services.rows.memories import memory_insert


def memories_with_embeddings(tenant: Tenant, texts: list[str], **fields: Any) -> list[Memory]:
    vectors = embed_texts(texts, tenant=None)
    return [
        memory_insert(tenant=tenant, text=t, embedding=v, **fields)
        for t, v in zip(texts, vectors, strict=True)
    ]
