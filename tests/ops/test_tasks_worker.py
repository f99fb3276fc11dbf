"""End to end through a real Celery worker on Redis: jobs queued on commit, run, repeated."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from memory_app.models import DuplicateCluster, MaintenanceJob, Memory
from memory_app.models.jobs import JobKind, JobStatus
from memory_app.models.memory import MemoryStatus
from memory_app.services.maintenance.jobs import maintenance_job_create
from memory_app.tasks import compaction_periodic, expiry_run
from tests.factories import TenantFactory, unit_vector
from tests.factories.ops import put, put_updates
from tests.support.celery_live import live_worker, wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def _finished(job_id: int) -> bool:
    return MaintenanceJob.objects.get(pk=job_id).status in (JobStatus.DONE, JobStatus.FAILED)


def _states(tenant) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    return list(Memory.objects.filter(tenant=tenant).order_by("pk").values_list("pk", "status"))


def test_a_compaction_job_queued_on_commit_runs_in_the_worker_and_repeating_it_changes_nothing() -> None:
    tenant = TenantFactory()
    facts = put_updates(tenant, facts=2)
    put_updates(tenant, user_id="u2", facts=1)
    with live_worker():
        with transaction.atomic():
            job = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant)
        wait_for(lambda: _finished(job.pk), what="the compaction job")
        job.refresh_from_db()
        assert job.status == JobStatus.DONE, job.error
        assert (job.stats["scopes"], job.stats["rows"], job.stats["superseded"]) == (2, 9, 6)
        assert job.cursor["after"][1] == "u2"
        for old, _middle, newest in facts:
            old.refresh_from_db()
            assert old.status == MemoryStatus.SUPERSEDED and old.superseded_by_id == newest.pk
        states = _states(tenant)

        again = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant)
        wait_for(lambda: _finished(again.pk), what="the second compaction job")
        again.refresh_from_db()
        assert (again.stats["superseded"], again.stats["merged"], again.stats["queued"]) == (0, 0, 0)
        assert _states(tenant) == states


def test_review_detection_in_the_worker_queues_groups_and_merges_nothing() -> None:
    tenant = TenantFactory()
    put_updates(tenant, facts=2)
    with live_worker():
        with transaction.atomic():
            job = maintenance_job_create(kind=JobKind.REVIEW_DETECTION, tenant=tenant)
        wait_for(lambda: _finished(job.pk), what="the review-detection job")
    assert DuplicateCluster.objects.filter(tenant=tenant, origin="compaction").count() == 2
    assert not Memory.objects.filter(tenant=tenant).exclude(status=MemoryStatus.ACTIVE).exists()


def test_the_periodic_task_runs_one_compaction_job_per_tenant() -> None:
    a, b = TenantFactory(), TenantFactory()
    for tenant in (a, b):
        put_updates(tenant, facts=1)
    with live_worker():
        compaction_periodic.delay()
        wait_for(
            lambda: (
                MaintenanceJob.objects.filter(kind=JobKind.COMPACTION, status=JobStatus.DONE).count() == 2
            ),
            what="two compaction jobs",
        )
    assert sorted(MaintenanceJob.objects.values_list("tenant_id", flat=True)) == sorted([a.pk, b.pk])
    for tenant in (a, b):
        assert Memory.objects.filter(tenant=tenant, status=MemoryStatus.ACTIVE).count() == 1


def test_expiry_runs_in_the_worker_and_a_second_run_expires_nothing_more() -> None:
    tenant, other = TenantFactory(), TenantFactory()
    past = timezone.now() - timedelta(days=1)
    gone = put(tenant, "temporary note", unit_vector(1), expires_at=past)
    kept = put(tenant, "lasting fact", unit_vector(2))
    pinned = put(tenant, "pinned note", unit_vector(3), expires_at=past, pinned=True)
    untouched = put(other, "other tenant's note", unit_vector(4), expires_at=past)
    with live_worker():
        first = expiry_run.delay(tenant.pk).get(timeout=60)
        assert Memory.objects.get(pk=gone.pk).status == MemoryStatus.DELETED
        states = _states(tenant)
        second = expiry_run.delay(tenant.pk).get(timeout=60)
        assert expiry_run.delay(tenant.pk + 10_000).get(timeout=60) == {}  # no such tenant: nothing
    assert sum(first["expired"].values()) == 1 and sum(second["expired"].values()) == 0
    assert _states(tenant) == states
    for memory in (kept, pinned, untouched):
        assert Memory.objects.get(pk=memory.pk).status == MemoryStatus.ACTIVE
