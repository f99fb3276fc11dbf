"""Plain inserts and edits of long-term memories (no dedup: that is services.store)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from django.db import DEFAULT_DB_ALIAS, connection, transaction
from django.utils import timezone

from memory_app.conf import embeddings_config, store_config
from memory_app.db import fetch_one
from memory_app.models import Memory, Tenant
from memory_app.text import normalized_hash


def memory_build(
    *,
    tenant: Tenant,
    text: str,
    kind: str = "episodic",
    embedding: np.ndarray | Sequence[float] | None = None,
    embedding_model: str | None = None,
    user_id: str = "",
    agent_id: str = "",
    namespace: str = "default",
    session_id: str = "",
    topics: Sequence[str] = (),
    entities: Sequence[str] = (),
    event_type: str = "",
    event_date: datetime | None = None,
    context: str = "",
    category: str = "",
    fact_type: str = "",
    source: str = "",
    metadata: dict[str, Any] | None = None,
    confidence: float | None = None,
    pinned: bool = False,
    expires_at: datetime | None = None,
    created_at: datetime | None = None,
) -> Memory:
    """An unsaved Memory with its hash and model name filled in (for bulk_create or save)."""
    return Memory(
        tenant=tenant,
        kind=kind,
        text=text,
        text_hash=normalized_hash(text),
        embedding=None if embedding is None else np.asarray(embedding, dtype=np.float32),
        embedding_model=(embedding_model or embeddings_config().model) if embedding is not None else "",
        user_id=user_id,
        agent_id=agent_id,
        namespace=namespace,
        session_id=session_id,
        topics=sorted(set(topics)),
        entities=sorted(set(entities)),
        event_type=event_type,
        event_date=event_date,
        context=context,
        category=category,
        fact_type=fact_type,
        source=source,
        metadata=metadata or {},
        confidence=store_config().default_confidence if confidence is None else confidence,
        pinned=pinned,
        expires_at=expires_at,
        created_at=created_at or timezone.now(),
    )


@transaction.atomic
def memory_insert(**fields: Any) -> Memory:
    """Insert one memory as given (keyword arguments of `memory_build`)."""
    memory = memory_build(**fields)
    memory.save()
    return memory


def memory_touch(*, tenant: Tenant, memory_ids: Sequence[int]) -> int:
    """Count an access for each id now (once per distinct id); the number of rows counted."""
    return memory_touch_counts(tenant_id=tenant.pk, counts=dict.fromkeys(memory_ids, 1))


def memory_touch_counts(*, tenant_id: int, counts: Mapping[int, int], at: datetime | None = None) -> int:
    """Add `counts[id]` accesses to each row: one UPDATE for the batch, not a write per row.

    The rows are locked in id order first: two concurrent writers counting overlapping rows in
    different orders would otherwise deadlock (PostgreSQL breaks it after deadlock_timeout, 1 s,
    and one of the counts is lost); in one order the second simply waits for the first.

    Run on its own, it is one statement and one round trip, its own implicit transaction, whose
    commit does not wait for the WAL flush (the setting made in the same statement lasts until that
    commit): an access count is a statistic, and a read should not pay a disk sync for it, nor four
    round trips (BEGIN, the setting, the UPDATE, COMMIT). Inside a caller's transaction the
    caller's durability is left alone.
    """
    if not counts:
        return 0
    ids = sorted(counts)
    table = Memory._meta.db_table
    asynchronous = "" if connection.in_atomic_block else ", set_config('synchronous_commit', 'off', true)"
    row = fetch_one(
        f"""
            WITH touched AS (
                UPDATE {table} AS m
                SET access_count = m.access_count + v.n,
                    last_accessed_at = greatest(m.last_accessed_at, %s)
                FROM (
                    SELECT id FROM {table} WHERE tenant_id = %s AND id = ANY(%s) ORDER BY id FOR UPDATE
                ) AS locked
                JOIN unnest(%s::bigint[], %s::int[]) AS v(id, n) ON v.id = locked.id
                WHERE m.id = locked.id
                RETURNING m.id
            )
            SELECT count(*){asynchronous} FROM touched
            """,
        [at or timezone.now(), tenant_id, ids, ids, [counts[i] for i in ids]],
        using=DEFAULT_DB_ALIAS,  # a write: the primary, even inside a read block
    )
    return int(row[0]) if row else 0


@transaction.atomic
def memory_insert_many(*, tenant: Tenant, items: Sequence[dict[str, Any]], batch_size: int = 1000) -> int:
    """Insert many memories as given (no dedup), in batches; each item holds `memory_build` fields."""
    rows = [memory_build(tenant=tenant, **item) for item in items]
    Memory.objects.bulk_create(rows, batch_size=batch_size)
    return len(rows)
