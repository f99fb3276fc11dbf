"""Deletion that really forgets: rows are hard-deleted with every record that holds their text.

What holds a memory's text besides its row: the rows it superseded or that were merged into it
(status superseded, `superseded_by` → it), `MemoryChangeSource.snapshot` (a JSON copy of a source
row), `MemoryChange.reason` and `DuplicateCluster.reason` (a judge may quote the text) and the admin
log (`object_repr` is the first 80 characters). All of those go. So do the tenant's embedding-cache
rows of those texts (a vector and a keyed digest of the text: enough to confirm a guess for whoever
holds SECRET_KEY), unless another memory or procedure of the tenant still has the same text. Cache
rows of search queries cannot be traced to a user and stay until the tenant is deleted
(docs/ARCHITECTURE.md, "Forgetting"; docs/OPERATIONS.md for dead tuples and WAL).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.db.models import Q

from memory_app.db.conflicts import retry_on_conflict
from memory_app.embeddings.cache.keys import CacheKeys
from memory_app.errors import ApplicationError, not_found
from memory_app.models import (
    ClusterMember,
    ConversationSession,
    DuplicateCluster,
    EmbeddingCacheEntry,
    Memory,
    MemoryChange,
    MemoryChangeSource,
    Procedure,
    SessionMessage,
    Tenant,
)
from memory_app.services.rows.locks import scopes_lock
from memory_app.services.store.quotes import SaidBy, others_messages_locked, quotes_forget, user_said


def admin_log_forget(model: type[models.Model], ids: Iterable[int]) -> int:
    """Admin log rows about these objects quote their text in `object_repr` and `change_message`."""
    keys = [str(i) for i in ids]
    if not keys:
        return 0
    content_types = [ContentType.objects.get_for_model(model, for_concrete_model=False)]
    if model._meta.proxy or model is Memory:
        memory_models: list[type[models.Model]] = [Memory, *Memory.__subclasses__()]
        content_types += [
            ContentType.objects.get_for_model(m, for_concrete_model=False) for m in memory_models
        ]
    return LogEntry.objects.filter(content_type__in=content_types, object_id__in=keys).delete()[0]


def embedding_cache_forget(*, tenant: Tenant, texts: Iterable[str]) -> int:
    """Delete the tenant's cache rows of these texts that no memory or procedure of it still holds."""
    wanted = set(texts)
    if not wanted:
        return 0
    keys = CacheKeys.of(tenant.pk)
    held = set(Memory.objects.filter(tenant=tenant, text__in=wanted).values_list("text", flat=True))
    held |= set(Procedure.objects.filter(tenant=tenant, pattern__in=wanted).values_list("pattern", flat=True))
    kept = {keys.exact(text) for text in held}
    gone = {keys.exact(text) for text in wanted} - kept
    if not gone:
        return 0
    return EmbeddingCacheEntry.objects.filter(tenant=tenant, content_hash__in=gone).delete()[0]


def _with_predecessors(tenant: Tenant, ids: set[int]) -> set[int]:
    """`ids` plus every row that was superseded by or merged into one of them, transitively."""
    frontier = set(ids)
    while frontier:
        older = set(
            Memory.objects.filter(tenant=tenant, superseded_by__in=frontier)
            .exclude(pk__in=ids)
            .values_list("pk", flat=True)
        )
        ids |= older
        frontier = older
    return ids


def _lock_scopes_of(tenant: Tenant, memory_ids: Sequence[int]) -> None:
    """The scope locks of these memories, taken before any row is read for deletion: a store in the
    same scope either finished before (its rows are seen and purged) or waits and sees them gone."""
    scopes = (
        Memory.objects.filter(tenant=tenant, pk__in=list(memory_ids))
        .values_list("user_id", "namespace", "kind")
        .distinct()
    )
    scopes_lock(tenant_id=tenant.pk, scopes=list(scopes))


@transaction.atomic
def memories_purge(*, tenant: Tenant, memory_ids: Sequence[int]) -> int:
    """Hard-delete memories, their predecessors and every lineage or review record naming them."""
    _lock_scopes_of(tenant, memory_ids)
    ids = set(Memory.objects.filter(tenant=tenant, pk__in=list(memory_ids)).values_list("pk", flat=True))
    if not ids:
        return 0
    ids = _with_predecessors(tenant, ids)
    # A change that consumed or produced one of them keeps its reason text: the whole change goes.
    change_ids = set(
        MemoryChangeSource.objects.filter(memory__in=ids).values_list("change_id", flat=True)
    ) | set(MemoryChange.objects.filter(tenant=tenant, result__in=ids).values_list("pk", flat=True))
    MemoryChange.objects.filter(tenant=tenant, pk__in=change_ids).delete()
    cluster_ids = set(ClusterMember.objects.filter(memory__in=ids).values_list("cluster_id", flat=True))
    DuplicateCluster.objects.filter(tenant=tenant, pk__in=cluster_ids).delete()
    admin_log_forget(Memory, ids)
    # Break superseded_by links inside the set first so the delete needs no per-row SET NULL.
    Memory.objects.filter(tenant=tenant, pk__in=ids).update(superseded_by=None)
    Memory.objects.filter(tenant=tenant, superseded_by__in=ids).update(superseded_by=None)
    texts = set(Memory.objects.filter(tenant=tenant, pk__in=ids).values_list("text", flat=True))
    deleted, _ = Memory.objects.filter(tenant=tenant, pk__in=ids).delete()
    embedding_cache_forget(tenant=tenant, texts=texts)
    return len(ids) if deleted else 0


@retry_on_conflict
@transaction.atomic
def memory_purge(*, tenant: Tenant, memory_id: int) -> int:
    """Forget one memory now (`DELETE /memories/{id}?purge=true`): the purge the expiry sweep would do
    after the grace period, at once. 404 when the tenant has no such row (already purged)."""
    if not Memory.objects.filter(tenant=tenant, pk=memory_id).exists():
        raise not_found(f"Memory {memory_id}")
    return memories_purge(tenant=tenant, memory_ids=[memory_id])


@transaction.atomic
def user_memories_delete(
    *,
    tenant: Tenant,
    user_id: str,
    episodic: bool = True,
    semantic: bool = True,
    procedural: bool = True,
    short_term: bool = True,
) -> dict[str, int]:
    """Forget a user: the chosen kinds, hard-deleted with their lineage. The tenant's shared
    knowledge base (semantic rows with user_id "") is not the user's and stays."""
    if not user_id:
        raise ApplicationError("user_id is required.", fields={"user_id": ["This field is required."]})
    counts = {"episodic": 0, "semantic": 0, "procedural": 0, "sessions": 0, "messages": 0}
    kinds = [k for k, on in (("episodic", episodic), ("semantic", semantic)) if on]
    # Who the user was in conversations, read before their memories and sessions go.
    said = user_said(tenant=tenant, user_id=user_id) if episodic or short_term else None
    session_ids: list[int] = []
    if short_term:
        # Session rows first (appends lock them too), then the scopes (as session_delete does). Only
        # the sessions locked here are deleted: one an append starts after this point is newer.
        # The sessions of others the user spoke in are locked now too, in the same order.
        spoken_in = said.session_ids if said is not None and said.names else frozenset()
        locked = (
            ConversationSession.objects.select_for_update()
            .filter(Q(user_id=user_id) | Q(session_id__in=spoken_in), tenant=tenant)
            .order_by("pk")
            .values_list("pk", "user_id")
        )
        session_ids = [pk for pk, owner in locked if owner == user_id]
    if kinds:
        scopes_lock(
            tenant_id=tenant.pk,
            scopes=Memory.objects.filter(tenant=tenant, user_id=user_id, kind__in=kinds)
            .values_list("user_id", "namespace", "kind")
            .distinct(),
        )
    for kind in kinds:
        ids = list(
            Memory.objects.filter(tenant=tenant, user_id=user_id, kind=kind).values_list("pk", flat=True)
        )
        counts[kind] = memories_purge(tenant=tenant, memory_ids=ids)
    if kinds:
        DuplicateCluster.objects.filter(tenant=tenant, user_id=user_id, kind__in=kinds).delete()
    if procedural:
        procs = Procedure.objects.filter(tenant=tenant, user_id=user_id)
        admin_log_forget(Procedure, procs.values_list("pk", flat=True))
        patterns = set(procs.values_list("pattern", flat=True))
        counts["procedural"] = procs.delete()[0]
        embedding_cache_forget(tenant=tenant, texts=patterns)
    if short_term:
        message_ids = list(
            SessionMessage.objects.filter(session__in=session_ids).values_list("pk", flat=True)
        )
        admin_log_forget(ConversationSession, session_ids)
        admin_log_forget(SessionMessage, message_ids)
        counts["messages"] = SessionMessage.objects.filter(pk__in=message_ids).delete()[0]
        counts["sessions"] = ConversationSession.objects.filter(tenant=tenant, pk__in=session_ids).delete()[0]
    if said is not None:
        quotes_forget(tenant=tenant, said=said, user_id=user_id)
        if short_term:
            counts["messages"] += _others_messages_forget(tenant, said)
    return counts


def _others_messages_forget(tenant: Tenant, said: SaidBy) -> int:
    """The user's messages in other users' sessions (a multi-party conversation)."""
    removed = 0
    for session, rows in others_messages_locked(tenant=tenant, said=said).items():
        ids = [pk for pk, _tokens in rows]
        admin_log_forget(SessionMessage, ids)
        SessionMessage.objects.filter(pk__in=ids).delete()
        session.token_count = max(0, session.token_count - sum(tokens for _pk, tokens in rows))
        session.save(update_fields=["token_count", "updated_at"])
        removed += len(ids)
    return removed
