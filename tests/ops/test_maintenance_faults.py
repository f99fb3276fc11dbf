"""Maintenance that cannot stall: a refused enqueue, stale jobs, heartbeats, a run taken over."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from memory_app.models import MaintenanceJob, Memory
from memory_app.models.jobs import JobKind, JobStatus
from memory_app.models.memory import MemoryStatus
from memory_app.services.maintenance.jobs import (
    maintenance_job_create,
    maintenance_job_run,
    maintenance_job_schedule,
)
from memory_app.tasks import maintenance_job_run as maintenance_task
from tests.factories import TenantFactory
from tests.factories.ops import put_updates
from tests.support.celery_live import broker_at, live_worker, wait_for

DEAD_BROKER = "redis://127.0.0.1:1/0"  # nothing listens on port 1: connections are refused
ROOT = Path(__file__).resolve().parents[2]


def _stale(job: MaintenanceJob, **fields: object) -> None:
    """Make the job look abandoned: created and last heard of ten minutes ago."""
    long_ago = timezone.now() - timedelta(minutes=10)
    MaintenanceJob.objects.filter(pk=job.pk).update(
        **{"created_at": long_ago, "heartbeat_at": long_ago, **fields}
    )


@pytest.mark.django_db
def test_a_job_the_broker_refuses_is_marked_failed_with_the_reason(
    django_capture_on_commit_callbacks,
) -> None:  # type: ignore[no-untyped-def]
    tenant = TenantFactory()
    with broker_at(DEAD_BROKER), django_capture_on_commit_callbacks(execute=True):
        started = time.monotonic()
        job = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant)
    assert time.monotonic() - started < 10
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.finished_at is not None
    assert job.error.startswith("could not be queued") and "refused" in job.error.lower()


@pytest.mark.django_db(transaction=True)
def test_compact_enqueue_with_a_dead_broker_fails_the_job_and_exits_with_a_message() -> None:
    tenant = TenantFactory()
    put_updates(tenant, facts=1)
    with broker_at(DEAD_BROKER), pytest.raises(CommandError, match="could not be queued") as raised:
        call_command("compact", "--tenant", tenant.slug, "--apply", "--enqueue", stdout=StringIO())
    job = MaintenanceJob.objects.get(tenant=tenant)
    assert job.status == JobStatus.FAILED and f"--resume {job.pk}" in str(raised.value)
    # Not stuck: the schedule makes a new job, and the failed one can be run in-process.
    assert maintenance_job_schedule(kind=JobKind.COMPACTION, tenant=tenant) is not None
    call_command("compact", "--resume", str(job.pk), stdout=StringIO(), stderr=StringIO())
    assert MaintenanceJob.objects.get(pk=job.pk).status == JobStatus.DONE


@pytest.mark.django_db
def test_a_stale_queued_job_does_not_block_the_schedule_it_is_queued_again_and_finishes(
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    tenant = TenantFactory()
    put_updates(tenant, facts=1)
    lost = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant, enqueue=False)  # message lost
    _stale(lost, heartbeat_at=None)
    with django_capture_on_commit_callbacks(execute=True):  # no broker here: the task runs inline
        taken = maintenance_job_schedule(kind=JobKind.COMPACTION, tenant=tenant)
    assert taken is not None and taken.pk == lost.pk
    lost.refresh_from_db()
    assert (lost.status, lost.stats["takeovers"], lost.stats["superseded"]) == (JobStatus.DONE, 1, 2)


@pytest.mark.django_db
def test_a_running_job_of_a_dead_worker_is_taken_over_and_resumes_from_its_cursor(
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    tenant = TenantFactory()
    for user_id in ("u1", "u2"):
        put_updates(tenant, user_id=user_id, facts=1)
    job = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant, enqueue=False)

    def die(_report: object) -> None:
        raise SystemExit  # not resumable: only the row's "running" and its heartbeat stay behind

    with pytest.raises(SystemExit):
        maintenance_job_run(job_id=job.pk, on_scope=die)
    MaintenanceJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, error="", finished_at=None)
    assert maintenance_job_schedule(kind=JobKind.COMPACTION, tenant=tenant) is None  # fresh: alive
    assert maintenance_job_run(job_id=job.pk) is None  # a redelivered task does not run it twice
    _stale(job)
    with django_capture_on_commit_callbacks(execute=True):
        assert maintenance_job_schedule(kind=JobKind.COMPACTION, tenant=tenant).pk == job.pk
    job.refresh_from_db()
    assert (job.status, job.stats["scopes"], job.stats["superseded"]) == (JobStatus.DONE, 2, 4)
    assert Memory.objects.filter(tenant=tenant, status=MemoryStatus.ACTIVE).count() == 2


@pytest.mark.django_db
def test_a_run_whose_job_was_taken_over_stops_without_writing_over_the_new_owner() -> None:
    tenant = TenantFactory()
    for user_id in ("u1", "u2", "u3"):
        put_updates(tenant, user_id=user_id, facts=1)
    job = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant, enqueue=False)

    def taken_over(_report: object) -> None:
        MaintenanceJob.objects.filter(pk=job.pk).update(claimed_by="other-host:1:abcd")

    assert maintenance_job_run(job_id=job.pk, on_scope=taken_over) is None
    job.refresh_from_db()
    assert (job.status, job.claimed_by, job.stats["scopes"]) == (JobStatus.RUNNING, "other-host:1:abcd", 1)
    assert job.cursor["after"][1] == "u1"


@pytest.mark.django_db(transaction=True)
@override_settings(MAINTENANCE_JOB_HEARTBEAT_SECONDS=1)
def test_a_running_job_heartbeats_while_a_long_scope_runs() -> None:
    tenant = TenantFactory()
    put_updates(tenant, facts=1)
    job = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant, enqueue=False)
    advanced: list[bool] = []

    def long_scope(_report: object) -> None:
        before = MaintenanceJob.objects.get(pk=job.pk).heartbeat_at
        time.sleep(2.5)
        advanced.append(MaintenanceJob.objects.get(pk=job.pk).heartbeat_at > before)

    assert maintenance_job_run(job_id=job.pk, on_scope=long_scope) is not None
    assert advanced == [True]


@pytest.mark.celery
@pytest.mark.django_db(transaction=True)
@override_settings(MAINTENANCE_JOB_STALE_SECONDS=3)
def test_a_redelivered_task_for_a_job_claimed_a_moment_ago_looks_again_instead_of_dropping_it() -> None:
    tenant = TenantFactory()
    put_updates(tenant, facts=1)
    job = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant, enqueue=False)
    # The worker that claimed it was killed an instant ago: its heartbeat is still fresh.
    MaintenanceJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, heartbeat_at=timezone.now(), claimed_by="dead-host:1:abcd"
    )
    with live_worker():
        maintenance_task.delay(job.pk)
        wait_for(lambda: MaintenanceJob.objects.get(pk=job.pk).status == JobStatus.DONE, timeout=60)
    job.refresh_from_db()
    assert job.stats["takeovers"] == 1 and job.claimed_by != "dead-host:1:abcd"


@pytest.mark.django_db(transaction=True)
def test_the_compact_command_with_a_dead_broker_exits_1_with_a_message_and_no_traceback() -> None:
    """The real command line, in a process of its own (the tasks must register there too)."""
    tenant = TenantFactory()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.worker_settings",
        "WORKER_TEST_DATABASE": connection.settings_dict["NAME"],
        "WORKER_KEY_PREFIX": "unused:",
        "CELERY_BROKER_URL": DEAD_BROKER,
    }
    command = [sys.executable, "manage.py", "compact", "--tenant", tenant.slug, "--apply", "--enqueue"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "CommandError:" in done.stderr and "could not be queued" in done.stderr
    assert "refused" in done.stderr.lower() and "Traceback" not in done.stderr
    job = MaintenanceJob.objects.get(tenant=tenant)
    assert job.status == JobStatus.FAILED and "refused" in job.error.lower()


@pytest.mark.django_db
@override_settings(MAINTENANCE_JOB_HEARTBEAT_SECONDS=1)
def test_a_job_run_inside_an_uncommitted_transaction_is_not_taken_for_lost_by_its_heartbeat() -> None:
    tenant = TenantFactory()
    for user_id in ("u1", "u2"):
        put_updates(tenant, user_id=user_id, facts=1)
    job = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant, enqueue=False)  # not committed

    def long_scope(_report: object) -> None:
        time.sleep(1.5)  # the heartbeat thread, on its own connection, cannot see the row meanwhile

    done = maintenance_job_run(job_id=job.pk, on_scope=long_scope)
    assert done is not None and (done.status, done.stats["scopes"]) == (JobStatus.DONE, 2)
