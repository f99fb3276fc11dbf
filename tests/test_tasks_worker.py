"""End to end through a real Celery worker on Redis: jobs queued on commit, run, resumed, repeated."""

from __future__ import annotations

import pytest
from django.db import transaction

from memory_app.models import MaintenanceJob, Memory
from memory_app.models.jobs import JobKind, JobStatus
from memory_app.models.memory import MemoryStatus
from memory_app.services.maintenance import maintenance_job_create
from memory_app.tasks import compaction_periodic
from tests.celery_live import live_worker, wait_for
from tests.factories import TenantFactory
from tests.factories_ops import near, put

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def _finished(job_id: int) -> bool:
    return MaintenanceJob.objects.get(pk=job_id).status in (JobStatus.DONE, JobStatus.FAILED)


def test_a_compaction_job_queued_on_commit_runs_in_the_worker_and_repeats_as_a_no_op() -> None:
    tenant = TenantFactory()
    put(tenant, "The user prefers morning workouts.", near(1, 0.03, 1))
    put(tenant, "User prefers morning workouts", near(1, 0.03, 2))
    put(tenant, "User is allergic to peanuts", near(7, 0.03, 1), user_id="u2")
    put(tenant, "User has a peanut allergy", near(7, 0.03, 2), user_id="u2")
    with live_worker():
        with transaction.atomic():
            job = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant, params={"radius": 0.3})
            assert MaintenanceJob.objects.get(pk=job.pk).status == JobStatus.QUEUED
        wait_for(lambda: _finished(job.pk), what="the compaction job")
        job.refresh_from_db()
        assert job.status == JobStatus.DONE, job.error
        assert job.stats["scopes"] == 2 and job.stats["rows"] == 4 and job.stats["groups"] == 2
        assert job.cursor["after"][1] == "u2"
        states = list(Memory.objects.filter(tenant=tenant).order_by("pk").values_list("pk", "status"))

        again = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant, params={"radius": 0.3})
        wait_for(lambda: _finished(again.pk), what="the second compaction job")
        again.refresh_from_db()
        assert again.stats.get("merged", 0) + again.stats.get("superseded", 0) == 0
        assert list(Memory.objects.filter(tenant=tenant).order_by("pk").values_list("pk", "status")) == states
        active = Memory.objects.filter(tenant=tenant, status=MemoryStatus.ACTIVE).count()
        assert active == 4 - job.stats["merged"] + job.stats["merged"] // 2 - job.stats["superseded"]


def test_the_periodic_task_schedules_one_job_per_tenant_and_never_two_at_once() -> None:
    a, b = TenantFactory(), TenantFactory()
    for tenant in (a, b):
        put(tenant, "likes tea", near(3, 0.03, 1))
        put(tenant, "likes tea a lot", near(3, 0.03, 2))
    with live_worker():
        compaction_periodic.delay()
        wait_for(
            lambda: (
                MaintenanceJob.objects.filter(kind=JobKind.COMPACTION, status=JobStatus.DONE).count() == 2
            ),
            what="two compaction jobs",
        )
    assert set(MaintenanceJob.objects.values_list("tenant_id", flat=True)) == {a.pk, b.pk}
