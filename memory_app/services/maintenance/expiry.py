"""Forgetting: TTL per kind, a per-user cap, and the purge that makes expired text really go.

Two steps, so an expiry can be noticed and undone for a while but the text does not stay forever:
1. expire (soft): an unpinned active or superseded memory whose `expires_at` has passed, or that was
   not used for its kind's TTL (MEMORY_TTL_DAYS_*, counted from the later of created_at and
   last_accessed_at), becomes status `deleted` with `expires_at` = now. With MEMORY_KEEP_TOP_N, a
   user's active episodic memories beyond the N best by retention score expire the same way.
2. purge (hard): memories expired, or deleted through the API, more than MEMORY_EXPIRY_GRACE_DAYS ago
   are deleted with their lineage and review records (services.forget.memories_purge).
Procedures unused for MEMORY_TTL_DAYS_PROCEDURAL and sessions untouched for
MEMORY_TTL_DAYS_SHORT_TERM are deleted at once: they hold no lineage worth a grace period.
Pinned memories never expire. A dry run counts everything and changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

import numpy as np
from django.db import models, transaction
from django.db.models import Q, QuerySet
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from memory_app.conf import maintenance_config
from memory_app.models import ConversationSession, Memory, Procedure, SessionMessage, Tenant
from memory_app.models.memory import MemoryKind, MemoryStatus
from memory_app.retrieval.forgetting import beyond_top_n, retention_scores
from memory_app.services.store.forget import memories_purge

_M = TypeVar("_M", bound=models.Model)


@dataclass
class ExpiryReport:
    dry_run: bool
    now: str
    expired: dict[str, int] = field(default_factory=dict)  # per kind, by TTL or expires_at
    capped: int = 0  # expired by the per-user keep-top-N cap
    purged: int = 0  # hard-deleted after the grace period
    procedures: int = 0
    sessions: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ttl_days(kind: str) -> int:
    config = maintenance_config()
    days: dict[str, int] = {
        MemoryKind.EPISODIC: config.ttl_days_episodic,
        MemoryKind.SEMANTIC: config.ttl_days_semantic,
    }
    return days[kind]


def _scoped(qs: QuerySet[_M], tenant: Tenant | None) -> QuerySet[_M]:
    return qs if tenant is None else qs.filter(tenant=tenant)


def expired_memories(*, tenant: Tenant | None, now: datetime) -> QuerySet[Memory]:
    """Unpinned active or superseded memories past their expires_at or their kind's TTL."""
    due = Q(expires_at__lte=now)
    for kind in MemoryKind.values:
        days = _ttl_days(kind)
        if days > 0:
            due |= Q(kind=kind, expires_at__isnull=True, last_used__lt=now - timedelta(days=days))
    qs = Memory.objects.filter(
        status__in=[MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED], pinned=False
    ).annotate(last_used=Greatest("created_at", Coalesce("last_accessed_at", "created_at")))
    return _scoped(qs, tenant).filter(due)


def _beyond_cap(*, tenant: Tenant | None, now: datetime, exclude: set[int]) -> list[int]:
    n = maintenance_config().keep_top_n
    if n <= 0:
        return []
    rows = (
        _scoped(Memory.objects.all(), tenant)
        .filter(kind=MemoryKind.EPISODIC, status=MemoryStatus.ACTIVE, pinned=False)
        .exclude(user_id="")
        .exclude(pk__in=exclude)
        .values_list(
            "pk",
            "tenant_id",
            "user_id",
            "created_at",
            "last_accessed_at",
            "access_count",
            "helpful_count",
            "harmful_count",
        )
    )
    per_user: dict[tuple[int, str], list[tuple]] = defaultdict(list)
    for row in rows:
        per_user[(row[1], row[2])].append(row)
    # Pinned rows are not counted against the cap: they are kept regardless.
    gone: list[int] = []
    for user_rows in per_user.values():
        if len(user_rows) <= n:
            continue
        ids = np.array([r[0] for r in user_rows])
        age = np.array([(now - max(r[3], r[4] or r[3])).total_seconds() / 86400 for r in user_rows])
        scores = retention_scores(
            age,
            np.array([r[5] for r in user_rows]),
            np.array([r[6] for r in user_rows]),
            np.array([r[7] for r in user_rows]),
            half_life_days=maintenance_config().retention_half_life_days,
        )
        gone.extend(int(i) for i in beyond_top_n(scores, ids, n))
    return gone


@transaction.atomic
def memories_expire(
    *, tenant: Tenant | None = None, now: datetime | None = None, dry_run: bool = False
) -> ExpiryReport:
    """Expire, cap and purge (see the module docstring); `tenant=None` sweeps every tenant."""
    now = now or timezone.now()
    report = ExpiryReport(dry_run=dry_run, now=now.isoformat())

    due = expired_memories(tenant=tenant, now=now)
    due_ids = set(due.values_list("pk", flat=True))
    for kind in MemoryKind.values:
        report.expired[kind] = Memory.objects.filter(pk__in=due_ids, kind=kind).count()
    capped = _beyond_cap(tenant=tenant, now=now, exclude=due_ids)
    report.capped = len(capped)

    config = maintenance_config()
    grace_cutoff = now - timedelta(days=config.expiry_grace_days)
    # Every deleted row goes after the grace: expired here (expires_at = expiry time), deleted through
    # the API or retired by an undo (no expires_at: updated_at is when it was deleted).
    purgeable = (
        _scoped(Memory.objects.all(), tenant)
        .filter(status=MemoryStatus.DELETED)
        .annotate(deleted_at=Coalesce("expires_at", "updated_at"))
        .filter(deleted_at__lte=grace_cutoff)
    )
    procedures = Procedure.objects.none()
    if config.ttl_days_procedural > 0:
        cutoff = now - timedelta(days=config.ttl_days_procedural)
        procedures = _scoped(Procedure.objects.all(), tenant).filter(
            Q(last_used_at__lt=cutoff) | Q(last_used_at__isnull=True, created_at__lt=cutoff)
        )
    sessions = ConversationSession.objects.none()
    if config.ttl_days_short_term > 0:
        cutoff = now - timedelta(days=config.ttl_days_short_term)
        sessions = _scoped(ConversationSession.objects.all(), tenant).filter(updated_at__lt=cutoff)

    if dry_run:
        report.purged = purgeable.count()
        if config.expiry_grace_days == 0:
            report.purged += len(due_ids | set(capped))
        report.procedures = procedures.count()
        report.sessions = sessions.count()
        return report

    # Purge what expired long ago before soft-expiring more, so a grace of 0 purges in one run.
    purge_ids: dict[int, list[int]] = defaultdict(list)
    for pk, tenant_id in purgeable.values_list("pk", "tenant_id"):
        purge_ids[tenant_id].append(pk)
    Memory.objects.filter(pk__in=due_ids | set(capped)).update(status=MemoryStatus.DELETED, expires_at=now)
    if config.expiry_grace_days == 0:
        for pk, tenant_id in Memory.objects.filter(pk__in=due_ids | set(capped)).values_list(
            "pk", "tenant_id"
        ):
            purge_ids[tenant_id].append(pk)
    for tenant_id, ids in purge_ids.items():
        report.purged += memories_purge(tenant=Tenant.objects.get(pk=tenant_id), memory_ids=ids)
    report.procedures = procedures.delete()[0]
    session_ids = list(sessions.values_list("pk", flat=True))
    SessionMessage.objects.filter(session__in=session_ids).delete()
    report.sessions = ConversationSession.objects.filter(pk__in=session_ids).delete()[0]
    return report
