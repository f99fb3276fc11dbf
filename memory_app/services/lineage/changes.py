"""Merge, supersede and undo. No text is ever destroyed: sources stay, marked superseded, with a
snapshot of their row in the change record so an undo puts them back exactly as they were."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from decimal import Decimal
from itertools import combinations
from typing import Any

import numpy as np
from django.db import models, transaction
from django.db.models.expressions import RawSQL
from django.utils import timezone

from memory_app.conf import embeddings_config
from memory_app.db import citus_mode, execute_all, insert_sql, mark_saved
from memory_app.embeddings import embed_text
from memory_app.errors import ApplicationError, not_found
from memory_app.models import Memory, MemoryChange, MemoryChangeSource, MemoryTokens, Tenant
from memory_app.models.lineage import ChangeOperation, ChangeRelation
from memory_app.models.memory import MemoryStatus
from memory_app.services.actors import Actor
from memory_app.services.lineage.apart import pairs_keep_apart
from memory_app.services.lineage.sql import VECTOR_COLUMNS, lock_and_reserve, vector_of
from memory_app.services.rows.locks import scope_lock
from memory_app.services.rows.memories import memory_build
from memory_app.services.rows.tokens import memory_tokens_rows

# Every column a merge or supersede may change on a source row, restored by undo.
RESTORED_FIELDS = ("status", "superseded_by_id", "updated_at")
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
        if f.attname not in VECTOR_COLUMNS
    }


def _lock_active(
    tenant: Tenant, ids: Sequence[int], *, memory_ids: int = 0
) -> tuple[list[Memory], list[int], int]:
    """The active memories `ids`, locked, with `memory_ids` new memory ids and a change id reserved."""
    rows, reserved, change_id = lock_and_reserve(tenant=tenant, ids=ids, memory_ids=memory_ids)
    if change_id is None or len(rows) != len(set(ids)):
        raise not_found("Memory")
    inactive = [m.pk for m in rows if m.status != MemoryStatus.ACTIVE]
    if inactive:
        raise ApplicationError(
            f"Memories {inactive} are not active; only active memories can be merged or superseded.",
            code="conflict",
            status=409,
        )
    return rows, reserved, change_id


def _check_same_scope(rows: Sequence[Memory]) -> None:
    scopes = {tuple(getattr(m, f) for f in SCOPE_FIELDS) for m in rows}
    if len(scopes) > 1:
        raise ApplicationError(
            "Only memories of one user, namespace and kind can be merged.", code="conflict"
        )


def _retire_sql(tenant: Tenant, ids: Sequence[int], *, by: int, now: dt.datetime) -> tuple[str, list[Any]]:
    """Retire the sources in one UPDATE. A status change cannot be a HOT update (status is in
    memory_scope_idx), so each row is re-inserted into the B-tree and GIN indexes, but not into
    memory_embedding_hnsw, which holds active rows only."""
    return (
        f"UPDATE {Memory._meta.db_table} SET status = %s, superseded_by_id = %s, updated_at = %s "
        "WHERE tenant_id = %s AND id = ANY(%s)",
        [MemoryStatus.SUPERSEDED, by, now, tenant.pk, list(ids)],
    )


def _change(
    *,
    pk: int,
    tenant: Tenant,
    operation: str,
    relation: str,
    result_id: int,
    actor: Actor,
    reason: str,
    confidence: float | None,
    now: dt.datetime,
) -> MemoryChange:
    return MemoryChange(
        pk=pk,
        tenant=tenant,
        operation=operation,
        relation=relation,
        result_id=result_id,
        actor_type=actor.type,
        actor_user=actor.user_or_none,
        reason=reason,
        confidence=confidence,
        created_at=now,
    )


def _change_sql(change: MemoryChange, snapshots: dict[int, dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    sources = [
        MemoryChangeSource(change_id=change.pk, memory_id=pk, snapshot=s) for pk, s in snapshots.items()
    ]
    return [insert_sql(MemoryChange, [change]), insert_sql(MemoryChangeSource, sources)]


def _result_vector(tenant: Tenant, text: str, same_text: Memory | None, incoming: Memory | None) -> Any:
    """The surviving text's vector: the incoming memory's, a source's (copied inside the database),
    or, for a text no member has, a new embedding."""
    if same_text is None:
        return embed_text(text, tenant=tenant)
    if same_text is incoming:
        return same_text.embedding
    if citus_mode() and same_text.has_embedding:
        # Citus routes no INSERT holding a subquery: the vector makes the round trip instead.
        return Memory.objects.filter(tenant_id=same_text.tenant_id, pk=same_text.pk).values_list(
            "embedding", flat=True
        )[0]
    return vector_of(same_text.pk, tenant_id=same_text.tenant_id) if same_text.has_embedding else None


# No savepoint of their own (as review_cluster_create): the write path calls them inside its
# transaction, where a savepoint adds two round trips to every merge and supersede. An error rolls
# the caller's transaction back; a caller that carries on after one wraps the call in atomic(), as
# compaction and bulk review do, and every view or task is its own transaction.
@transaction.atomic(savepoint=False)
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
    Two round trips: lock and reserve ids (services.lineage_sql), then every write (memory_app.db).
    """
    if len(set(memory_ids)) + (incoming is not None) < 2:
        raise ApplicationError(
            "A merge needs at least two memories.", fields={"memory_ids": ["Give two or more."]}
        )
    actor = actor or Actor.system()
    locked, reserved, change_id = _lock_active(tenant, memory_ids, memory_ids=1 + (incoming is not None))
    sources = [*locked, incoming] if incoming is not None else locked
    _check_same_scope(sources)
    richest, chosen_text = _merged_text(sources=sources, text=text)
    same_text = next((m for m in sources if m.text == chosen_text), None)
    vector = embedding if embedding is not None else _result_vector(tenant, chosen_text, same_text, incoming)
    base = same_text or richest
    now = timezone.now()
    result_id = reserved[0]
    new_rows = []
    if incoming is not None:
        incoming.pk = reserved[1]
        incoming.status, incoming.superseded_by_id = MemoryStatus.SUPERSEDED, result_id
        new_rows.append(incoming)
    result = _merge_result(
        tenant=tenant, sources=sources, text=chosen_text, base=base, vector=vector, result_id=result_id
    )
    new_rows.append(result)
    # Compiled before the snapshots: compiling fills the rows' auto_now `updated_at`.
    insert_rows = insert_sql(Memory, new_rows)
    snapshots = _merge_snapshots(sources=sources, incoming=incoming)
    change = _change(
        pk=change_id,
        tenant=tenant,
        operation=ChangeOperation.MERGE,
        relation=relation,
        result_id=result_id,
        actor=actor,
        reason=reason,
        confidence=confidence,
        now=now,
    )
    # The token vectors the encoder holds for the new rows' texts ride along in the same round trip.
    tokens = memory_tokens_rows(tenant_id=tenant.pk, memories=[(row.pk, row.text) for row in new_rows])
    # The sources' UPDATE first: it frees the unique text slot the result takes.
    execute_all(
        [
            _retire_sql(tenant, [m.pk for m in locked], by=result_id, now=now),
            insert_rows,
            *_change_sql(change, snapshots),
            *([insert_sql(MemoryTokens, tokens)] if tokens else []),
        ]
    )
    for row in new_rows:
        mark_saved(row)
    if isinstance(result.embedding, RawSQL):
        del result.embedding  # deferred: loaded from the database on first access
    return mark_saved(change)


def _merged_text(*, sources: Sequence[Memory], text: str | None) -> tuple[Memory, str]:
    """The most informative source (the longest, then the newest) and the merged text: `text`, or
    that source's own."""
    richest = max(sources, key=lambda m: (len(m.text), m.created_at))
    chosen_text = (text if text is not None else richest.text).strip()
    if not chosen_text:
        raise ApplicationError("Merged text must not be empty.", fields={"text": ["This field is required."]})
    return richest, chosen_text


def _merge_result(
    *, tenant: Tenant, sources: Sequence[Memory], text: str, base: Memory, vector: Any, result_id: int
) -> Memory:
    """The unsaved result row: `base`'s scope and labels, the sources' topics and entities united,
    their metadata layered oldest first, their counters summed."""
    result = memory_build(
        tenant=tenant,
        text=text,
        kind=base.kind,
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
    result.pk = result_id
    if vector is not None:
        result.embedding = vector if isinstance(vector, RawSQL) else np.asarray(vector, dtype=np.float32)
        result.embedding_model = base.embedding_model or embeddings_config().model
    _merge_counters(result=result, sources=sources)
    return result


def _merge_counters(*, result: Memory, sources: Sequence[Memory]) -> None:
    result.access_count = sum(m.access_count for m in sources)
    result.helpful_count = sum(m.helpful_count for m in sources)
    result.harmful_count = sum(m.harmful_count for m in sources)
    result.last_accessed_at = max((m.last_accessed_at for m in sources if m.last_accessed_at), default=None)


def _merge_snapshots(*, sources: Sequence[Memory], incoming: Memory | None) -> dict[int, dict[str, Any]]:
    """The sources as they were; the incoming memory's says active, so an undo leaves it stored."""
    snapshots = {m.pk: memory_snapshot(m) for m in sources}
    if incoming is not None:
        snapshots[incoming.pk].update(status=MemoryStatus.ACTIVE, superseded_by_id=None)
    return snapshots


@transaction.atomic(savepoint=False)
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
    locked, _, change_id = _lock_active(tenant, [old_id, new_id])
    rows = {m.pk: m for m in locked}
    old, new = rows[old_id], rows[new_id]
    _check_same_scope([old, new])
    now = timezone.now()
    change = _change(
        pk=change_id,
        tenant=tenant,
        operation=ChangeOperation.SUPERSEDE,
        relation=ChangeRelation.UPDATE,
        result_id=new.pk,
        actor=actor,
        reason=reason,
        confidence=confidence,
        now=now,
    )
    execute_all(
        [
            _retire_sql(tenant, [old.pk], by=new.pk, now=now),
            *_change_sql(change, {old.pk: memory_snapshot(old)}),
        ]
    )
    return mark_saved(change)


def _restore_value(field_name: str, value: Any) -> Any:
    field = Memory._meta.get_field(
        field_name.removesuffix("_id") if field_name.endswith("_id") else field_name
    )
    if field_name == "superseded_by_id":
        return value
    assert isinstance(field, models.Field), "snapshots hold the memory's own columns, never a relation"
    return field.to_python(value)


@transaction.atomic
def memory_change_undo(*, tenant: Tenant, change_id: int, actor: Actor | None = None) -> MemoryChange:
    """Put the sources back exactly as they were; a merge's result row is retired (status deleted).

    Undoing a merge is a decision: its sources are recorded as kept apart, so no later store or
    compaction merges them again until a person does. Changes are undone newest first: a result
    that a later change consumed must be freed first.
    """
    actor = actor or Actor.system()
    # The scope's lock before any row lock, as the store path takes them: an undo makes rows of the
    # scope active again, so a concurrent store must see all or none of it.
    result_id = (
        MemoryChange.objects.filter(tenant=tenant, pk=change_id).values_list("result_id", flat=True).first()
    )
    scope = (
        Memory.objects.filter(tenant=tenant, pk=result_id).values_list("user_id", "namespace", "kind").first()
        if result_id is not None
        else None
    )
    if scope is not None:
        scope_lock(tenant_id=tenant.pk, user_id=scope[0], namespace=scope[1], kind=scope[2])
    change = MemoryChange.objects.select_for_update().filter(tenant=tenant, pk=change_id).first()
    if change is None:
        raise not_found(f"Change {change_id}")
    if change.undone_at is not None:
        raise ApplicationError(f"Change {change_id} was already undone.", code="conflict", status=409)
    if change.operation == ChangeOperation.REDACT:
        raise ApplicationError(
            f"Change {change_id} removed an erased user's words; it cannot be undone.",
            code="conflict",
            status=409,
        )
    result = Memory.objects.select_for_update().get(tenant=tenant, pk=change.result_id)
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
        Memory.objects.filter(tenant=tenant, pk=result.pk).update(status=MemoryStatus.DELETED, updated_at=now)
    sources = list(change.sources.select_related(None).all())
    for source in sources:
        restored = {name: _restore_value(name, source.snapshot.get(name)) for name in RESTORED_FIELDS}
        Memory.objects.filter(tenant=tenant, pk=source.memory_id).update(**restored)
    if change.operation == ChangeOperation.MERGE:
        ids = sorted({source.memory_id for source in sources})
        pairs_keep_apart(tenant=tenant, pairs=set(combinations(ids, 2)), actor=actor, now=now)
    change.undone_at = now
    change.undone_by = actor.user_or_none
    change.save(update_fields=["undone_at", "undone_by"])
    return change
