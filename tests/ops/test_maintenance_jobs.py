"""Maintenance jobs: resume after interruption, failure and retry, scheduling, concurrency with writes."""

from __future__ import annotations

import contextlib
import threading
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from memory_app.errors import ApplicationError
from memory_app.models import DuplicateCluster, MaintenanceJob, Memory, MemoryChange, MemoryChangeSource
from memory_app.models.jobs import JobKind, JobStatus
from memory_app.models.memory import MemoryStatus
from memory_app.services.lineage.changes import memory_supersede
from memory_app.services.maintenance.jobs import (
    maintenance_job_create,
    maintenance_job_retry,
    maintenance_job_run,
    maintenance_job_schedule,
)
from memory_app.services.rows.locks import scope_lock, scope_lock_key
from tests.factories import TenantFactory
from tests.factories.ops import put_updates


def _run(*args: Any) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.django_db
def test_an_interrupted_job_resumes_after_the_last_finished_scope() -> None:
    tenant = TenantFactory()
    put_updates(tenant, user_id="u1", facts=1)
    put_updates(tenant, user_id="u2", facts=1)
    job = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant, enqueue=False)

    def stop(_report: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        maintenance_job_run(job_id=job.pk, on_scope=stop)
    job.refresh_from_db()
    assert (job.status, job.cursor["after"][1], job.stats["scopes"]) == (JobStatus.QUEUED, "u1", 1)
    assert Memory.objects.filter(tenant=tenant, user_id="u2", status=MemoryStatus.ACTIVE).count() == 3

    done = maintenance_job_run(job_id=job.pk)
    assert done is not None and done.status == JobStatus.DONE
    assert (done.stats["scopes"], done.stats["rows"], done.stats["superseded"]) == (2, 6, 4)
    assert maintenance_job_run(job_id=job.pk) is None  # finished: running it again does nothing


@pytest.mark.django_db
def test_a_failed_job_records_the_error_and_retry_resumes_it() -> None:
    tenant = TenantFactory()
    put_updates(tenant, facts=1)
    job = maintenance_job_create(
        kind=JobKind.COMPACTION, tenant=tenant, params={"judge": "nonsense"}, enqueue=False
    )
    with pytest.raises(ValueError):
        maintenance_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "nonsense" in job.error
    MaintenanceJob.objects.filter(pk=job.pk).update(params={})
    assert maintenance_job_retry(job_id=job.pk).status == JobStatus.QUEUED
    assert maintenance_job_run(job_id=job.pk).status == JobStatus.DONE


@pytest.mark.django_db
def test_scheduling_skips_a_tenant_whose_job_is_still_queued() -> None:
    tenant, other = TenantFactory(), TenantFactory()
    first = maintenance_job_schedule(kind=JobKind.COMPACTION, tenant=tenant)
    assert first is not None
    assert maintenance_job_schedule(kind=JobKind.COMPACTION, tenant=tenant) is None
    assert maintenance_job_schedule(kind=JobKind.REVIEW_DETECTION, tenant=tenant) is not None
    assert maintenance_job_schedule(kind=JobKind.COMPACTION, tenant=other) is not None
    with pytest.raises(ApplicationError):
        maintenance_job_create(kind="nonsense", tenant=tenant)


@pytest.mark.django_db
def test_compaction_takes_the_same_scope_lock_as_the_store_path() -> None:
    from memory_app.selectors.store.neighbours import Scope
    from memory_app.services.store.write import scope_lock_key as store_key

    tenant = TenantFactory()
    for user_id, namespace, kind in (("u1", "default", "episodic"), ("", "kb", "semantic")):
        ours = scope_lock_key(tenant_id=tenant.pk, user_id=user_id, namespace=namespace, kind=kind)
        assert ours == store_key(tenant, Scope(user_id=user_id, namespace=namespace, kind=kind))


def test_scope_lock_keys_are_stable_and_distinct_per_scope() -> None:
    key = scope_lock_key(tenant_id=1, user_id="u", namespace="default", kind="episodic")
    assert key == scope_lock_key(tenant_id=1, user_id="u", namespace="default", kind="episodic")
    assert -(2**63) <= key < 2**63
    others = {
        scope_lock_key(tenant_id=2, user_id="u", namespace="default", kind="episodic"),
        scope_lock_key(tenant_id=1, user_id="v", namespace="default", kind="episodic"),
        scope_lock_key(tenant_id=1, user_id="u", namespace="other", kind="episodic"),
        scope_lock_key(tenant_id=1, user_id="u", namespace="default", kind="semantic"),
    }
    assert key not in others and len(others) == 4


@pytest.mark.django_db
def test_compact_command_dry_run_prints_the_plan_and_changes_nothing_then_apply_acts_once() -> None:
    tenant = TenantFactory()
    put_updates(tenant, facts=2)
    out = _run("compact", "--tenant", tenant.slug)
    assert out.count("would supersede") == 4 and "nothing written" in out
    assert "User's BMI goal is 23" in out
    assert not Memory.objects.filter(tenant=tenant).exclude(status=MemoryStatus.ACTIVE).exists()

    assert "'superseded': 4" in _run("compact", "--tenant", tenant.slug, "--apply")
    assert "'superseded': 0" in _run("compact", "--tenant", tenant.slug, "--apply")
    assert MemoryChange.objects.filter(tenant=tenant).count() == 4
    with pytest.raises(CommandError):
        _run("compact", "--resume", "999999")


@pytest.mark.django_db
def test_compact_command_queue_only_fills_the_review_queue() -> None:
    tenant = TenantFactory()
    put_updates(tenant, facts=2, user_id="u9")
    _run("compact", "--tenant", tenant.slug, "--queue-only", "--apply", "--user-id", "u9")
    assert DuplicateCluster.objects.filter(tenant=tenant, origin="compaction").count() == 2
    assert MemoryChange.objects.filter(tenant=tenant).count() == 0


@pytest.mark.django_db(transaction=True)
def test_compaction_and_concurrent_writes_never_lose_or_double_a_change() -> None:
    tenant = TenantFactory()
    facts = put_updates(tenant, facts=5)
    job = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant, enqueue=False)
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def writer() -> None:
        # What the store path does on an update: under the scope lock, supersede if still active.
        try:
            start.wait()
            for old, middle, newest in facts:
                for stale in (old, middle):
                    with transaction.atomic():
                        scope_lock(tenant_id=tenant.pk, user_id="u1", namespace="default", kind="episodic")
                        with contextlib.suppress(ApplicationError):  # compaction got there first
                            memory_supersede(tenant=tenant, old_id=stale.pk, new_id=newest.pk)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    def compactor() -> None:
        try:
            start.wait()
            maintenance_job_run(job_id=job.pk)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer), threading.Thread(target=compactor)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    for old, middle, newest in facts:
        for stale in (old, middle):
            stale.refresh_from_db()
            assert stale.status == MemoryStatus.SUPERSEDED and stale.superseded_by_id == newest.pk
            assert MemoryChangeSource.objects.filter(memory=stale).count() == 1  # exactly one change each
        newest.refresh_from_db()
        assert newest.status == MemoryStatus.ACTIVE
    assert MemoryChange.objects.filter(tenant=tenant).count() == 10
