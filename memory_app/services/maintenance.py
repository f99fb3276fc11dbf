"""Maintenance jobs: compaction and review-queue detection over a tenant or the whole store.

A job row records its parameters and a cursor (the last scope finished), so a run that was
interrupted (worker killed, soft time limit) resumes after the last finished scope, and running a
finished job again does nothing. Celery tasks only pass the job's id (memory_app/tasks.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

from memory_app.errors import ApplicationError
from memory_app.models import MaintenanceJob, Tenant
from memory_app.models.jobs import JobKind, JobStatus
from memory_app.selectors.compaction import ScopeKey, compaction_scopes
from memory_app.services.compaction import Mode, ScopeReport, judge_tools, scope_compact

logger = logging.getLogger(__name__)

SCOPE_JOB_KINDS = {JobKind.COMPACTION: "apply", JobKind.REVIEW_DETECTION: "queue"}
ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)
SCOPE_PARAMS = ("user_id", "namespace", "kind")
RESUMABLE = (SoftTimeLimitExceeded, OperationalError, InterfaceError, KeyboardInterrupt)


def _enqueue(job: MaintenanceJob) -> None:
    from memory_app.tasks import maintenance_job_run

    job_id = job.pk
    transaction.on_commit(lambda: maintenance_job_run.delay(job_id))


@transaction.atomic
def maintenance_job_create(
    *, kind: str, tenant: Tenant | None = None, params: dict[str, Any] | None = None, enqueue: bool = True
) -> MaintenanceJob:
    """A queued job, handed to a worker when this transaction commits (inline without a broker)."""
    if kind not in SCOPE_JOB_KINDS:
        raise ApplicationError(f"Unknown maintenance job kind {kind!r}.", fields={"kind": ["Unknown kind."]})
    job = MaintenanceJob.objects.create(kind=kind, tenant=tenant, params=dict(params or {}))
    if enqueue:
        _enqueue(job)
    return job


@transaction.atomic
def maintenance_job_schedule(*, kind: str, tenant: Tenant) -> MaintenanceJob | None:
    """The periodic entry: a new job unless one of this kind is already queued or running."""
    busy = MaintenanceJob.objects.select_for_update().filter(
        kind=kind, tenant=tenant, status__in=ACTIVE_STATUSES
    )
    stale_before = timezone.now() - timedelta(seconds=settings.MAINTENANCE_JOB_STALE_SECONDS)
    if busy.exclude(status=JobStatus.RUNNING, heartbeat_at__lt=stale_before).exists():
        return None
    return maintenance_job_create(kind=kind, tenant=tenant)


def _claim(job_id: int) -> MaintenanceJob | None:
    """Mark the job running unless it is finished or another worker is alive on it."""
    stale_before = timezone.now() - timedelta(seconds=settings.MAINTENANCE_JOB_STALE_SECONDS)
    with transaction.atomic():
        job = MaintenanceJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            logger.warning("maintenance job %s does not exist", job_id)
            return None
        alive = job.status == JobStatus.RUNNING and job.heartbeat_at and job.heartbeat_at >= stale_before
        if job.status not in ACTIVE_STATUSES or alive:
            logger.info("maintenance job %s is %s; nothing to do", job_id, job.status)
            return None
        now = timezone.now()
        job.status, job.heartbeat_at = JobStatus.RUNNING, now
        job.started_at = job.started_at or now
        job.save(update_fields=["status", "heartbeat_at", "started_at"])
        return job


def _tenants(job: MaintenanceJob) -> list[Tenant]:
    if job.tenant_id is not None:
        return [job.tenant] if job.tenant is not None else []
    return list(Tenant.objects.filter(is_active=True).order_by("pk"))


def _add(stats: dict[str, Any], report: ScopeReport) -> None:
    for name, value in report.counters().items():
        stats[name] = stats.get(name, 0) + value
    stats["scopes"] = stats.get("scopes", 0) + 1
    stats["seconds"] = round(stats.get("seconds", 0.0) + report.seconds, 3)


def _checkpoint(job: MaintenanceJob, scope: ScopeKey, report: ScopeReport) -> None:
    _add(job.stats, report)
    job.cursor = {"after": scope.as_list()}
    job.heartbeat_at = timezone.now()
    MaintenanceJob.objects.filter(pk=job.pk).update(
        cursor=job.cursor, stats=job.stats, heartbeat_at=job.heartbeat_at
    )


def _scope_params(job: MaintenanceJob) -> dict[str, str | None]:
    return {name: job.params.get(name) for name in SCOPE_PARAMS}


def maintenance_job_run(
    *, job_id: int, on_scope: Callable[[ScopeReport], None] | None = None
) -> MaintenanceJob | None:
    """Run (or resume) a compaction or review-detection job to the end; returns None if not claimed.

    Not one transaction on purpose: each group commits on its own and the cursor after each scope,
    so work done before an interruption is kept and never repeated.
    """
    job = _claim(job_id)
    if job is None:
        return None
    mode: Mode = SCOPE_JOB_KINDS[job.kind]  # type: ignore[assignment]
    try:
        tools = judge_tools(judge_name=job.params.get("judge"), radius=job.params.get("radius"))
        after = ScopeKey(*job.cursor["after"]) if job.cursor.get("after") else None
        for tenant in _tenants(job):
            if after is not None and tenant.pk < after.tenant_id:
                continue
            for scope, _count in compaction_scopes(tenant=tenant, after=after, **_scope_params(job)):
                report = scope_compact(tenant=tenant, scope=scope, tools=tools, mode=mode)
                _checkpoint(job, scope, report)
                if on_scope is not None:
                    on_scope(report)
    except BaseException as exc:
        if isinstance(exc, RESUMABLE):
            # The task retries (or re-queues itself) and resumes from the cursor.
            MaintenanceJob.objects.filter(pk=job.pk).update(status=JobStatus.QUEUED)
            logger.warning("maintenance job %s paused at %s: %s", job.pk, job.cursor, type(exc).__name__)
        else:
            MaintenanceJob.objects.filter(pk=job.pk).update(
                status=JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now()
            )
            logger.exception("maintenance job %s failed", job.pk)
        raise
    job.status, job.finished_at = JobStatus.DONE, timezone.now()
    job.save(update_fields=["status", "finished_at"])
    logger.info("maintenance job %s (%s) done: %s", job.pk, job.kind, job.stats)
    return job


@transaction.atomic
def maintenance_job_retry(*, job_id: int) -> MaintenanceJob:
    """Put a failed job back in the queue; it resumes from its cursor."""
    updated = MaintenanceJob.objects.filter(Q(pk=job_id), Q(status=JobStatus.FAILED)).update(
        status=JobStatus.QUEUED, error=""
    )
    job = MaintenanceJob.objects.get(pk=job_id)
    if updated:
        _enqueue(job)
    return job
