"""Forgetting what others quoted: an erased user's words out of every other memory of their sessions.

`/interactions` copies each message's neighbours into the memory's `context` (a "Name: words" line
per message, extraction/conversation.py), so another speaker's memory holds the erased user's lines.
They are rewritten in place, not turned into references to session messages: `context` feeds the
full-text column (`search_vector`) and /context/all reads it with the row, and session messages are
trimmed by their budget, so a reference could neither be searched nor always resolved. Each rewrite
is a `redact` change in the lineage that counts the removed lines and never quotes them; the
snapshots of earlier changes get the same rewrite. The erased user's messages in other users'
sessions (a multi-party conversation) are deleted with them (services/store/forget.py).

Who the user was in a conversation comes from their own memories (read before they are purged): the
speaker name their messages were kept under, their message lines, and the sessions those came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory_app.db import execute_all, insert_sql
from memory_app.extraction.conversation import context_without
from memory_app.models import (
    ConversationSession,
    Memory,
    MemoryChange,
    MemoryChangeSource,
    SessionMessage,
    Tenant,
)
from memory_app.models.lineage import ActorType, ChangeOperation, ChangeRelation


@dataclass(frozen=True)
class SaidBy:
    """What one user said in conversations: speaker names, exact message lines, session ids."""

    names: frozenset[str]
    lines: frozenset[str]
    session_ids: frozenset[str]


def _speaker_of(metadata: Any) -> str:
    """The name a memory's own speaker went by, when the memory is about that speaker."""
    if not isinstance(metadata, dict):
        return ""
    speaker = metadata.get("speaker")
    return speaker if isinstance(speaker, str) and speaker and metadata.get("about") == speaker else ""


def user_said(*, tenant: Tenant, user_id: str) -> SaidBy:
    """Read before the erasure: afterwards nothing says who the user was in a conversation."""
    names: set[str] = set()
    lines: set[str] = set()
    sessions: set[str] = set()
    rows = Memory.objects.filter(tenant=tenant, user_id=user_id).exclude(session_id="")
    for session_id, text, metadata in rows.values_list("session_id", "text", "metadata").iterator():
        sessions.add(session_id)
        if name := _speaker_of(metadata):
            names.add(name)
            if metadata.get("extracted_by") == "message":
                lines.add(text)
    own = set(
        ConversationSession.objects.filter(tenant=tenant, user_id=user_id).values_list(
            "session_id", flat=True
        )
    )
    messages = SessionMessage.objects.filter(session__tenant=tenant)
    # In the user's own sessions an unnamed "user" message is theirs (it was stored under their id).
    for content in messages.filter(session__session_id__in=own, role="user", speaker="").values_list(
        "content", flat=True
    ):
        lines.add(f"User: {content}")
    if names:
        for speaker, content in messages.filter(
            session__session_id__in=sessions | own, speaker__in=names
        ).values_list("speaker", "content"):
            lines.add(f"{speaker}: {content}")
    return SaidBy(names=frozenset(names), lines=frozenset(lines), session_ids=frozenset(sessions | own))


def _rewritten(context: Any, said: SaidBy) -> tuple[str, int] | None:
    """(new context, lines removed), or None when the context quotes nothing of `said`."""
    if not isinstance(context, str) or not context:
        return None
    new = context_without(context, lines=said.lines, names=said.names)
    if new == context:
        return None
    return new, max(1, context.count("\n") - new.count("\n") if new else context.count("\n") + 1)


@transaction.atomic
def quotes_forget(*, tenant: Tenant, said: SaidBy, user_id: str) -> dict[str, int]:
    """Rewrite other users' memories (and their lineage snapshots) of `said`'s sessions without the
    user's lines."""
    counts = {"contexts": 0, "snapshots": 0}
    if not said.session_ids or not (said.names or said.lines):
        return counts
    others = Memory.objects.filter(tenant=tenant, session_id__in=said.session_ids).exclude(user_id=user_id)
    now = timezone.now()
    changes = []
    for pk, context in others.exclude(context="").values_list("pk", "context").iterator():
        rewrite = _rewritten(context, said)
        if rewrite is None:
            continue
        Memory.objects.filter(tenant=tenant, pk=pk).update(context=rewrite[0], updated_at=now)
        changes.append(
            MemoryChange(
                tenant=tenant,
                operation=ChangeOperation.REDACT,
                relation=ChangeRelation.MANUAL,
                result_id=pk,
                actor_type=ActorType.SYSTEM,
                reason=f"context: {rewrite[1]} quoted line(s) of an erased user removed",
                created_at=now,
            )
        )
    if changes:
        execute_all([insert_sql(MemoryChange, changes)])
    counts["contexts"] = len(changes)
    sources = MemoryChangeSource.objects.filter(memory__in=others.values("pk"))
    for source in sources.only("pk", "snapshot").iterator():
        rewrite = _rewritten((source.snapshot or {}).get("context"), said)
        if rewrite is not None:
            source.snapshot = {**source.snapshot, "context": rewrite[0]}
            source.save(update_fields=["snapshot"])
            counts["snapshots"] += 1
    return counts


def others_messages_locked(
    *, tenant: Tenant, said: SaidBy
) -> dict[ConversationSession, list[tuple[int, int]]]:
    """The user's messages (id, tokens) in the sessions of `said`, per session, each session locked
    as appends lock it. The caller deletes them (services.forget, with the admin log)."""
    if not said.names:
        return {}
    sessions = list(
        ConversationSession.objects.select_for_update()
        .filter(tenant=tenant, session_id__in=said.session_ids)
        .order_by("pk")
    )
    found = {}
    for session in sessions:
        rows = list(
            SessionMessage.objects.filter(session=session, speaker__in=said.names).values_list(
                "pk", "token_count"
            )
        )
        if rows:
            found[session] = rows
    return found
