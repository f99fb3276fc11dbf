"""Merge, supersede and undo. No text is ever destroyed: sources stay, marked superseded, with a
snapshot of their row in the change record so an undo puts them back exactly as they were."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from memory_app.errors import ApplicationError, not_found
from memory_app.models import Memory, MemoryChange, MemoryChangeSource, Tenant
from memory_app.models.lineage import ChangeOperation, ChangeRelation
from memory_app.models.memory import MemoryStatus
from memory_app.services.actors import Actor
from memory_app.services.memories import memory_build

# Every column a merge or supersede may change on a source row, restored by undo.
RESTORED_FIELDS = ("status", "superseded_by_id", "updated_at")
SNAPSHOT_EXCLUDE = {"embedding", "search_vector"}
SCOPE_FIELDS = ("tenant_id", "user_id", "namespace", "kind")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, Decimal | uuid.UUID):
        return str(value)
    return value


def memory_snapshot(memory: Memory) -> dict[str, Any]:
    """Every column but the vectors, JSON-ready."""
    return {
        f.attname: _jsonable(getattr(memory, f.attname))
        for f in Memory._meta.concrete_fields
        if f.attname not in SNAPSHOT_EXCLUDE
    }


def _lock_active(tenant: Tenant, ids: Sequence[int]) -> list[Memory]:
    # Vectors stay in the database: a merge needs at most one (its text's), loaded on first access,
    # and parsing every source's 384 floats cost ~0.2 ms each.
    rows = list(
        Memory.objects.select_for_update()
        .defer("embedding", "search_vector")
        .filter(tenant=tenant, pk__in=list(ids))
        .order_by("pk")
    )
    if len(rows) != len(set(ids)):
        raise not_found("Memory")
    inactive = [m.pk for m in rows if m.status != MemoryStatus.ACTIVE]
    if inactive:
        raise ApplicationError(
            f"Memories {inactive} are not active; only active memories can be merged or superseded.",
            code="conflict",
            status=409,
        )
    return rows


def _check_same_scope(rows: Sequence[Memory]) -> None:
    scopes = {tuple(getattr(m, f) for f in SCOPE_FIELDS) for m in rows}
    if len(scopes) > 1:
        raise ApplicationError(
            "Only memories of one user, namespace and kind can be merged.", code="conflict"
        )


def _retire(memory: Memory, *, by: Memory | int, now: dt.datetime) -> None:
    by_id = by if isinstance(by, int) else by.pk
    Memory.objects.filter(pk=memory.pk).update(
        status=MemoryStatus.SUPERSEDED, superseded_by_id=by_id, updated_at=now
    )


def _next_memory_id() -> int:
    """Reserve the result's id, so each source is retired with one UPDATE pointing at it (the FK is
    checked at commit). A status change cannot be a HOT update (status is in memory_scope_idx), so the
    UPDATE re-inserts each row into the B-tree indexes (not the HNSW graph, which holds active rows only)."""
    table = Memory._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT nextval(pg_get_serial_sequence('{table}', 'id'))")
        return int(cursor.fetchone()[0])


@transaction.atomic
def memory_merge(
    *,
    tenant: Tenant,
    memory_ids: Sequence[int],
    text: str | None = None,
    relation: str = ChangeRelation.DUPLICATE,
    actor: Actor | None = None,
    reason: str = "",
    confidence: float | None = None,
    embedding: np.ndarray | None = None,
    incoming: Memory | None = None,
) -> MemoryChange:
    """Merge active memories of one scope into a new result row; the sources become superseded.

    `text` defaults to the most informative source (the longest); another text needs `embedding`
    unless it equals a source's text. Counters are summed, topics and entities united.
    `incoming`: an unsaved memory of the same scope (the write path's new memory) that joins as a
    source; it is inserted already superseded, one write instead of an insert and a status UPDATE,
    and its snapshot says active, so an undo leaves it stored as if no merge had happened.
    """
    if len(set(memory_ids)) + (incoming is not None) < 2:
        raise ApplicationError(
            "A merge needs at least two memories.", fields={"memory_ids": ["Give two or more."]}
        )
    actor = actor or Actor.system()
    locked = _lock_active(tenant, memory_ids)
    sources = [*locked, incoming] if incoming is not None else locked
    _check_same_scope(sources)
    richest = max(sources, key=lambda m: (len(m.text), m.created_at))
    chosen_text = (text if text is not None else richest.text).strip()
    if not chosen_text:
        raise ApplicationError("Merged text must not be empty.", fields={"text": ["This field is required."]})
    same_text = next((m for m in sources if m.text == chosen_text), None)
    if embedding is None:
        if same_text is not None:
            embedding = None if same_text.embedding is None else np.asarray(same_text.embedding)
        else:
            from memory_app.embeddings import embed_text

            embedding = embed_text(chosen_text)
    base = same_text or richest
    now = timezone.now()
    result_id = _next_memory_id()
    # One UPDATE for all sources; it frees the unique text slot before the result's insert.
    Memory.objects.filter(pk__in=[m.pk for m in locked]).update(
        status=MemoryStatus.SUPERSEDED, superseded_by_id=result_id, updated_at=now
    )
    if incoming is not None:
        incoming.status, incoming.superseded_by_id = MemoryStatus.SUPERSEDED, result_id
        incoming.save(force_insert=True)
    result = memory_build(
        tenant=tenant,
        text=chosen_text,
        kind=base.kind,
        embedding=embedding,
        embedding_model=base.embedding_model or None,
        user_id=base.user_id,
        agent_id=base.agent_id,
        namespace=base.namespace,
        session_id=base.session_id,
        topics=sorted({t for m in sources for t in m.topics}),
        entities=sorted({e for m in sources for e in m.entities}),
        event_type=base.event_type,
        event_date=max((m.event_date for m in sources if m.event_date), default=None),
        context=base.context,
        category=base.category,
        fact_type=base.fact_type,
        source=base.source,
        metadata={k: v for m in sorted(sources, key=lambda m: m.created_at) for k, v in m.metadata.items()},
        confidence=max(m.confidence for m in sources),
        pinned=any(m.pinned for m in sources),
        created_at=min(m.created_at for m in sources),
    )
    result.access_count = sum(m.access_count for m in sources)
    result.helpful_count = sum(m.helpful_count for m in sources)
    result.harmful_count = sum(m.harmful_count for m in sources)
    result.last_accessed_at = max((m.last_accessed_at for m in sources if m.last_accessed_at), default=None)
    result.pk = result_id
    result.save(force_insert=True)
    change = MemoryChange.objects.create(
        tenant=tenant,
        operation=ChangeOperation.MERGE,
        relation=relation,
        result=result,
        actor_type=actor.type,
        actor_user=actor.user_or_none,
        reason=reason,
        confidence=confidence,
    )
    snapshots = {m.pk: memory_snapshot(m) for m in sources}
    if incoming is not None:
        snapshots[incoming.pk].update(status=MemoryStatus.ACTIVE, superseded_by_id=None)
    MemoryChangeSource.objects.bulk_create(
        [MemoryChangeSource(change=change, memory=m, snapshot=snapshots[m.pk]) for m in sources]
    )
    return change


@transaction.atomic
def memory_supersede(
    *,
    tenant: Tenant,
    old_id: int,
    new_id: int,
    actor: Actor | None = None,
    reason: str = "",
    confidence: float | None = None,
) -> MemoryChange:
    """`new` replaces `old` (a changed value): old stays, superseded and linked to new."""
    if old_id == new_id:
        raise ApplicationError("A memory cannot supersede itself.")
    actor = actor or Actor.system()
    rows = {m.pk: m for m in _lock_active(tenant, [old_id, new_id])}
    old, new = rows[old_id], rows[new_id]
    _check_same_scope([old, new])
    snapshot = memory_snapshot(old)
    _retire(old, by=new, now=timezone.now())
    change = MemoryChange.objects.create(
        tenant=tenant,
        operation=ChangeOperation.SUPERSEDE,
        relation=ChangeRelation.UPDATE,
        result=new,
        actor_type=actor.type,
        actor_user=actor.user_or_none,
        reason=reason,
        confidence=confidence,
    )
    MemoryChangeSource.objects.create(change=change, memory=old, snapshot=snapshot)
    return change


def _restore_value(field_name: str, value: Any) -> Any:
    field = Memory._meta.get_field(
        field_name.removesuffix("_id") if field_name.endswith("_id") else field_name
    )
    if field_name == "superseded_by_id":
        return value
    return field.to_python(value)


@transaction.atomic
def memory_change_undo(*, tenant: Tenant, change_id: int, actor: Actor | None = None) -> MemoryChange:
    """Put the sources back exactly as they were; a merge's result row is retired (status deleted).

    Changes are undone newest first: a result that a later change consumed must be freed first.
    """
    actor = actor or Actor.system()
    change = MemoryChange.objects.select_for_update().filter(tenant=tenant, pk=change_id).first()
    if change is None:
        raise not_found(f"Change {change_id}")
    if change.undone_at is not None:
        raise ApplicationError(f"Change {change_id} was already undone.", code="conflict", status=409)
    result = Memory.objects.select_for_update().get(pk=change.result_id)
    if change.operation == ChangeOperation.MERGE and result.status != MemoryStatus.ACTIVE:
        later = result.superseded_by_id
        raise ApplicationError(
            f"Memory {result.pk} produced by this merge was itself merged or superseded"
            f"{f' (by memory {later})' if later else ''}; undo that change first.",
            code="conflict",
            status=409,
        )
    now = timezone.now()
    if change.operation == ChangeOperation.MERGE:
        Memory.objects.filter(pk=result.pk).update(status=MemoryStatus.DELETED, updated_at=now)
    for source in change.sources.select_related(None).all():
        restored = {name: _restore_value(name, source.snapshot.get(name)) for name in RESTORED_FIELDS}
        Memory.objects.filter(pk=source.memory_id).update(**restored)
    change.undone_at = now
    change.undone_by = actor.user_or_none
    change.save(update_fields=["undone_at", "undone_by"])
    return change
