"""Edits of one stored memory: update (metadata in place, text through a supersede), soft delete, feedback."""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Func, Value
from django.db.models.functions import Greatest, Least
from django.utils import timezone

from memory_app.conf import store_config
from memory_app.embeddings import embed_text
from memory_app.errors import ApplicationError, not_found
from memory_app.models import Memory, Tenant
from memory_app.models.memory import MemoryStatus
from memory_app.services.actors import Actor
from memory_app.services.lineage.changes import memory_supersede
from memory_app.services.rows.locks import scope_lock
from memory_app.services.rows.memories import memory_build
from memory_app.services.rows.tokens import memory_tokens_save
from memory_app.services.store.validation import metadata_validate
from memory_app.text import normalized_hash

logger = logging.getLogger(__name__)

# Fields an edit may set in place; `text` is handled apart (it creates a new version).
EDITABLE_FIELDS = (
    "topics",
    "entities",
    "metadata",
    "pinned",
    "confidence",
    "expires_at",
    "event_type",
    "event_date",
    "context",
    "category",
    "fact_type",
    "source",
)
FEEDBACK_SIGNALS = ("helpful", "harmful")


def _scope_locked(tenant: Tenant, memory_id: int) -> None:
    """The memory's scope lock, taken before its row lock in the order the store path takes them
    (scope, then rows), so an edit or a delete and a store of the same scope never deadlock and a
    store never acts on a candidate deleted under it. A scope never changes, so reading it unlocked
    is safe."""
    scope = (
        Memory.objects.filter(tenant=tenant, pk=memory_id).values_list("user_id", "namespace", "kind").first()
    )
    if scope is not None:
        scope_lock(tenant_id=tenant.pk, user_id=scope[0], namespace=scope[1], kind=scope[2])


def _locked(tenant: Tenant, memory_id: int) -> Memory:
    memory = Memory.objects.select_for_update().filter(tenant=tenant, pk=memory_id).first()
    if memory is None:
        raise not_found(f"Memory {memory_id}")
    if memory.status == MemoryStatus.DELETED:
        raise ApplicationError(f"Memory {memory_id} is deleted.", code="conflict", status=409)
    return memory


def _embed_or_none(text: str, tenant: Tenant) -> Any:
    try:
        return embed_text(text, tenant=tenant)
    except Exception:
        logger.warning("embedding failed for an edited memory; storing it without a vector")
        return None


def _clean(changes: dict[str, Any]) -> dict[str, Any]:
    unknown = set(changes) - {*EDITABLE_FIELDS, "text"}
    if unknown:
        raise ApplicationError(
            "Unknown fields.", fields={name: ["This field cannot be edited."] for name in sorted(unknown)}
        )
    if "metadata" in changes:
        metadata_validate(changes["metadata"])
    if "confidence" in changes and not 0.0 <= float(changes["confidence"]) <= 1.0:
        raise ApplicationError("Invalid confidence.", fields={"confidence": ["Must be between 0 and 1."]})
    if "text" in changes:
        text = str(changes["text"]).strip()
        if not text or len(text) > store_config().max_text_chars:
            raise ApplicationError(
                "Invalid text.",
                fields={"text": [f"Must be 1 to {store_config().max_text_chars} characters."]},
            )
        changes = {**changes, "text": text}
    return changes


@transaction.atomic
def memory_update(
    *, tenant: Tenant, memory_id: int, changes: dict[str, Any], actor: Actor | None = None
) -> Memory:
    """Apply `changes`; returns the memory that now holds them.

    Metadata fields change in place. A new text is a new version: a new row with the new text (and the
    old row's other fields, counters and the other changes) supersedes the old one, which stays in the
    lineage and can be restored by undoing the change. A text that differs only in case, punctuation
    or spacing (same normalised hash) is corrected in place.
    """
    changes = _clean(dict(changes))
    text = changes.pop("text", None)
    if text is not None:
        _scope_locked(tenant, memory_id)
    memory = _locked(tenant, memory_id)
    if text is None or text == memory.text:
        return _update_in_place(memory, changes)
    if normalized_hash(text) == memory.text_hash:
        changes["text"] = text
        changes["embedding"] = _embed_or_none(text, tenant)
        memory = _update_in_place(memory, changes)
        memory_tokens_save(tenant=tenant, memories=[(memory.pk, text)])
        return memory
    if memory.status != MemoryStatus.ACTIVE:
        raise ApplicationError(
            f"Memory {memory_id} is {memory.status}; only an active memory's text can be edited.",
            code="conflict",
            status=409,
        )
    return _new_version(tenant, memory, text, changes, actor)


def _update_in_place(memory: Memory, changes: dict[str, Any]) -> Memory:
    for name, value in changes.items():
        setattr(memory, name, sorted(set(value)) if name in ("topics", "entities") else value)
    if changes:
        memory.save(update_fields=[*changes, "updated_at"])
    return memory


def _new_version(
    tenant: Tenant, old: Memory, text: str, changes: dict[str, Any], actor: Actor | None
) -> Memory:
    fields: dict[str, Any] = {name: getattr(old, name) for name in EDITABLE_FIELDS}
    fields.update(changes)
    new = memory_build(
        tenant=tenant,
        text=text,
        kind=old.kind,
        embedding=_embed_or_none(text, tenant),
        user_id=old.user_id,
        agent_id=old.agent_id,
        namespace=old.namespace,
        session_id=old.session_id,
        **fields,
    )
    new.access_count, new.helpful_count, new.harmful_count = (
        old.access_count,
        old.helpful_count,
        old.harmful_count,
    )
    new.last_accessed_at = old.last_accessed_at
    try:
        with transaction.atomic():
            new.save()
    except IntegrityError:
        twin = Memory.objects.filter(
            tenant=tenant,
            user_id=old.user_id,
            namespace=old.namespace,
            kind=old.kind,
            status=MemoryStatus.ACTIVE,
            text_hash=new.text_hash,
        ).values_list("pk", flat=True)
        raise ApplicationError(
            f"Another active memory in this scope already says this (memory {next(iter(twin), '?')}).",
            code="conflict",
            status=409,
            fields={"text": ["Duplicate of an active memory in the same scope."]},
        ) from None
    memory_supersede(
        tenant=tenant, old_id=old.pk, new_id=new.pk, actor=actor, reason="text edited through the API"
    )
    memory_tokens_save(tenant=tenant, memories=[(new.pk, text)])
    return new


@transaction.atomic
def memory_delete(*, tenant: Tenant, memory_id: int) -> None:
    """Soft delete: status `deleted`; the row and its lineage stay. Deleting twice is not an error."""
    _scope_locked(tenant, memory_id)
    memory = (
        Memory.objects.select_for_update().filter(tenant=tenant, pk=memory_id).only("id", "status").first()
    )
    if memory is None:
        raise not_found(f"Memory {memory_id}")
    if memory.status != MemoryStatus.DELETED:
        Memory.objects.filter(tenant=tenant, pk=memory.pk).update(
            status=MemoryStatus.DELETED, updated_at=timezone.now()
        )


@transaction.atomic
def memory_feedback(*, tenant: Tenant, memory_id: int, signal: str) -> Memory:
    """helpful: helpful_count + 1 and confidence moves STEP of the way to 1 (c + s(1 - c));
    harmful: harmful_count + 1 and confidence moves STEP of the way to 0 (c(1 - s)). Both stay in [0, 1]
    by construction, and the update is one SQL statement, so concurrent feedback is never lost."""
    if signal not in FEEDBACK_SIGNALS:
        raise ApplicationError("Invalid feedback.", fields={"signal": ['Use "helpful" or "harmful".']})
    memory = _locked(tenant, memory_id)
    step = store_config().feedback_step
    # LEAST/GREATEST only absorb float rounding; the formulas themselves never leave [0, 1].
    confidence: Func
    if signal == "helpful":
        confidence = Least(Value(1.0), F("confidence") + step * (Value(1.0) - F("confidence")))
        update = {"helpful_count": F("helpful_count") + 1, "confidence": confidence}
    else:
        confidence = Greatest(Value(0.0), F("confidence") * (1.0 - step))
        update = {"harmful_count": F("harmful_count") + 1, "confidence": confidence}
    Memory.objects.filter(tenant=tenant, pk=memory.pk).update(**update, updated_at=timezone.now())
    memory.refresh_from_db()
    return memory
