from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.utils import timezone

from memory_app.models import ConversationSession, Memory, Procedure
from memory_app.retrieval.forgetting import beyond_top_n, retention_scores
from memory_app.services.lineage.changes import memory_supersede
from memory_app.services.maintenance.expiry import memories_expire
from tests.factories import MemoryFactory, ProcedureFactory, SessionFactory

pytestmark = pytest.mark.django_db


def old(days: int):
    return timezone.now() - timedelta(days=days)


def test_retention_prefers_recent_used_and_helpful_memories():
    scores = retention_scores(
        np.array([1.0, 100.0, 1.0, 1.0]),
        np.array([0, 0, 10, 0]),
        np.array([0, 0, 0, 0]),
        np.array([0, 0, 0, 1]),
        half_life_days=30,
    )
    assert scores[0] > scores[1]  # recent beats old
    assert scores[2] > scores[0]  # reused beats unused
    assert scores[3] < scores[0]  # a harmful vote lowers it
    assert list(beyond_top_n(scores, np.array([1, 2, 3, 4]), 2)) == [4, 2]


def test_ttl_expires_unused_memories_but_never_pinned_ones(tenant_a, settings):
    settings.MEMORY_TTL_DAYS_EPISODIC = 30
    t = tenant_a.tenant
    stale = MemoryFactory(tenant=t, created_at=old(40))
    used = MemoryFactory(tenant=t, created_at=old(40), last_accessed_at=old(5))
    pinned = MemoryFactory(tenant=t, created_at=old(400), pinned=True)
    fresh = MemoryFactory(tenant=t, created_at=old(1))
    explicit = MemoryFactory(tenant=t, created_at=old(1), expires_at=old(0) - timedelta(minutes=1))
    report = memories_expire(tenant=t)
    assert report.expired["episodic"] == 2
    statuses = dict(Memory.objects.values_list("pk", "status"))
    assert statuses[stale.pk] == statuses[explicit.pk] == "deleted"
    assert statuses[used.pk] == statuses[pinned.pk] == statuses[fresh.pk] == "active"


def test_expired_text_is_purged_with_its_lineage_after_the_grace_period(tenant_a, settings):
    settings.MEMORY_TTL_DAYS_EPISODIC = 30
    settings.MEMORY_EXPIRY_GRACE_DAYS = 10
    t = tenant_a.tenant
    older = MemoryFactory(tenant=t, text="goal weight 80 kg", created_at=old(60))
    newer = MemoryFactory(tenant=t, text="goal weight 75 kg", created_at=old(50))
    memory_supersede(tenant=t, old_id=older.pk, new_id=newer.pk)
    memories_expire(tenant=t)
    assert Memory.objects.filter(status="deleted").count() == 2
    memories_expire(tenant=t, now=timezone.now() + timedelta(days=5))
    assert Memory.objects.count() == 2  # still inside the grace period
    report = memories_expire(tenant=t, now=timezone.now() + timedelta(days=11))
    assert report.purged == 2
    assert not Memory.objects.exists()
    from memory_app.models import MemoryChange, MemoryChangeSource

    assert not MemoryChange.objects.exists() and not MemoryChangeSource.objects.exists()


def test_keep_top_n_expires_the_lowest_scored_memories_per_user(tenant_a, settings):
    settings.MEMORY_KEEP_TOP_N = 2
    t = tenant_a.tenant
    keep_recent = MemoryFactory(tenant=t, created_at=old(1))
    keep_useful = MemoryFactory(tenant=t, created_at=old(20), helpful_count=5, access_count=8)
    drop = MemoryFactory(tenant=t, created_at=old(20))
    pinned = MemoryFactory(tenant=t, created_at=old(90), pinned=True)
    other_user = MemoryFactory(tenant=t, user_id="user-2", created_at=old(90))
    report = memories_expire(tenant=t)
    assert report.capped == 1
    active = set(Memory.objects.filter(status="active").values_list("pk", flat=True))
    assert active == {keep_recent.pk, keep_useful.pk, pinned.pk, other_user.pk}
    assert drop.pk not in active


def test_procedures_and_sessions_past_their_ttl_are_deleted(tenant_a, settings):
    settings.MEMORY_TTL_DAYS_PROCEDURAL = 30
    settings.MEMORY_TTL_DAYS_SHORT_TERM = 30
    t = tenant_a.tenant
    ProcedureFactory(tenant=t, last_used_at=old(31))
    live = ProcedureFactory(tenant=t, last_used_at=old(2))
    session = SessionFactory(tenant=t)
    ConversationSession.objects.filter(pk=session.pk).update(updated_at=old(31))
    report = memories_expire(tenant=t)
    assert (report.procedures, report.sessions) == (1, 1)
    assert list(Procedure.objects.values_list("pk", flat=True)) == [live.pk]
    assert not ConversationSession.objects.exists()


def test_dry_run_counts_everything_and_changes_nothing(tenant_a, tenant_b, settings):
    settings.MEMORY_TTL_DAYS_EPISODIC = 30
    settings.MEMORY_TTL_DAYS_PROCEDURAL = 30
    for tc in (tenant_a, tenant_b):
        MemoryFactory(tenant=tc.tenant, created_at=old(40))
        ProcedureFactory(tenant=tc.tenant, last_used_at=old(40))
    before = list(Memory.objects.order_by("pk").values())
    out = StringIO()
    call_command("expire_memories", "--json", "--tenant", tenant_a.tenant.slug, stdout=out)
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    assert report["dry_run"] is True
    assert report["expired"]["episodic"] == 1 and report["procedures"] == 1
    assert list(Memory.objects.order_by("pk").values()) == before
    assert Procedure.objects.count() == 2
    # the old --dry-run still is one, with a deprecation message
    err = StringIO()
    call_command(
        "expire_memories", "--dry-run", "--tenant", tenant_a.tenant.slug, stdout=StringIO(), stderr=err
    )
    assert "deprecated" in err.getvalue()
    assert list(Memory.objects.order_by("pk").values()) == before
    # the real run touches only the tenant asked for
    call_command("expire_memories", "--apply", "--tenant", tenant_a.tenant.slug, stdout=StringIO())
    assert Memory.objects.get(tenant=tenant_b.tenant).status == "active"
    assert Memory.objects.get(tenant=tenant_a.tenant).status == "deleted"


def test_memories_deleted_through_the_api_are_purged_after_the_grace_period(tenant_a, settings):
    settings.MEMORY_EXPIRY_GRACE_DAYS = 10
    memory = MemoryFactory(tenant=tenant_a.tenant, text="delete me later")
    assert tenant_a.client.delete(f"/api/v1/memories/{memory.pk}").status_code in (200, 204)
    assert Memory.objects.get(pk=memory.pk).status == "deleted"
    memories_expire(tenant=tenant_a.tenant, now=timezone.now() + timedelta(days=9))
    assert Memory.objects.filter(pk=memory.pk).exists()
    report = memories_expire(tenant=tenant_a.tenant, now=timezone.now() + timedelta(days=11))
    assert report.purged == 1
    assert not Memory.objects.filter(pk=memory.pk).exists()
