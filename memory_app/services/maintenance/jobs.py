"""Maintenance jobs: compaction and review-queue detection over a tenant or the whole store.

A job row records its parameters and a cursor (the last scope finished), so a run that was
interrupted (worker killed, soft time limit) resumes after the last finished scope, and running a
finished job again does nothing. Celery tasks only pass the job's id (memory_app/tasks.py); this
module hands jobs to the broker by task name, so services never import the tasks module.

A running job heartbeats from a thread every MAINTENANCE_JOB_HEARTBEAT_SECONDS and after every
scope. One whose heartbeat is older than MAINTENANCE_JOB_STALE_SECONDS lost its worker: a redelivered
task or the periodic scheduler claims it again, and `claimed_by` tells a slow old run that it no
longer owns the job. A job the broker would not take is marked failed with the reason.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError, connections, transaction
from django.db.models import Q
from django.utils import timezone

from memory_app.conf import maintenance_config
from memory_app.errors import ApplicationError
from memory_app.models import MaintenanceJob, Tenant
from memory_app.models.jobs import JobKind, JobStatus
from memory_app.selectors.compaction import ScopeKey, compaction_scopes
from memory_app.services.maintenance.compaction import Mode, ScopeReport, judge_tools, scope_compact
from memory_app.services.queue import SoftTimeLimitExceeded, task_send

logger = logging.getLogger(__name__)

SCOPE_JOB_KINDS: dict[str, Mode] = {JobKind.COMPACTION: "apply", JobKind.REVIEW_DETECTION: "queue"}
ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)
SCOPE_PARAMS = ("user_id", "namespace", "kind")
RESUMABLE = (SoftTimeLimitExceeded, OperationalError, InterfaceError, KeyboardInterrupt)
RUN_TASK = "memory.maintenance_job_run"


class JobTakenOver(Exception):
    """This run's job was claimed by another run (its heartbeat had gone stale): stop quietly."""


def _stale_before() -> datetime:
    return timezone.now() - timedelta(seconds=maintenance_config().job_stale_seconds)


def _send(job_id: int) -> bool:
    """Hand the job to the broker (inline without one); a refusal fails the job with the reason."""
    try:
        task_send(RUN_TASK, job_id)
    except Exception as exc:  # any broker or transport failure: record it rather than lose the job
        reason = f"could not be queued: {type(exc).__name__}: {exc}".strip()
        MaintenanceJob.objects.filter(pk=job_id, status__in=ACTIVE_STATUSES).update(
            status=JobStatus.FAILED, error=reason, finished_at=timezone.now()
        )
        logger.error("maintenance job %s %s", job_id, reason)
        return False
    return True


def _enqueue(job: MaintenanceJob) -> None:
    job_id = job.pk
    transaction.on_commit(lambda: _send(job_id))


@transaction.atomic
def maintenance_job_create(
    *, kind: str, tenant: Tenant | None = None, params: dict[str, Any] | None = None, enqueue: bool = True
) -> MaintenanceJob:
    """A queued job, handed to a worker when this transaction commits (inline without a broker).

    If the broker refuses it, the job is failed with the reason (`error`) right after the commit.
    """
    if kind not in SCOPE_JOB_KINDS:
        raise ApplicationError(f"Unknown maintenance job kind {kind!r}.", fields={"kind": ["Unknown kind."]})
    job = MaintenanceJob.objects.create(kind=kind, tenant=tenant, params=dict(params or {}))
    if enqueue:
        _enqueue(job)
    return job


def _is_stale(job: MaintenanceJob, stale_before: datetime) -> bool:
    """No sign of life since `stale_before`: not heartbeating (running) or not handed out (queued)."""
    last = job.heartbeat_at or job.created_at
    return last < stale_before


@transaction.atomic
def maintenance_job_schedule(*, kind: str, tenant: Tenant) -> MaintenanceJob | None:
    """The periodic entry: a new job unless one of this kind is alive for the tenant.

    A stale queued or running job (lost message, dead worker) does not block the schedule: it is
    handed to the broker again and resumes from its cursor; that job is returned.
    """
    active = list(
        MaintenanceJob.objects.select_for_update()
        .filter(kind=kind, tenant=tenant, status__in=ACTIVE_STATUSES)
        .order_by("pk")
    )
    stale_before = _stale_before()
    if any(not _is_stale(job, stale_before) for job in active):
        return None
    for job in active:
        logger.warning("maintenance job %s (%s) is stale; queued again to resume", job.pk, job.status)
        job.status, job.heartbeat_at = JobStatus.QUEUED, timezone.now()
        job.stats["takeovers"] = job.stats.get("takeovers", 0) + 1
        job.save(update_fields=["status", "heartbeat_at", "stats"])
        _enqueue(job)
    if active:
        return active[-1]
    return maintenance_job_create(kind=kind, tenant=tenant)


def maintenance_job_active(*, job_id: int) -> bool:
    """Still queued or running (for a task that found the job claimed by a live run)."""
    return MaintenanceJob.objects.filter(pk=job_id, status__in=ACTIVE_STATUSES).exists()


def _claim(job_id: int) -> MaintenanceJob | None:
    """Mark the job running under a new owner unless it is finished or another run is alive on it."""
    with transaction.atomic():
        job = MaintenanceJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            logger.warning("maintenance job %s does not exist", job_id)
            return None
        alive = job.status == JobStatus.RUNNING and not _is_stale(job, _stale_before())
        if job.status not in ACTIVE_STATUSES or alive:
            logger.info("maintenance job %s is %s; nothing to do", job_id, job.status)
            return None
        if job.status == JobStatus.RUNNING:
            logger.warning("maintenance job %s: taking over from stale run %s", job_id, job.claimed_by)
            job.stats["takeovers"] = job.stats.get("takeovers", 0) + 1
        now = timezone.now()
        job.status, job.heartbeat_at = JobStatus.RUNNING, now
        job.claimed_by = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        job.started_at = job.started_at or now
        job.save(update_fields=["status", "heartbeat_at", "started_at", "claimed_by", "stats"])
        return job


def _owned(job: MaintenanceJob) -> Any:
    return MaintenanceJob.objects.filter(pk=job.pk, status=JobStatus.RUNNING, claimed_by=job.claimed_by)


class _Heartbeat:
    """Beats from its own thread (its own database connection) while a long scope runs."""

    def __init__(self, job: MaintenanceJob) -> None:
        self.job = job
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"job-{job.pk}-heartbeat", daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.wait(maintenance_config().job_heartbeat_seconds):
                try:
                    if not _owned(self.job).update(heartbeat_at=timezone.now()):
                        # Lost only if the row says so: a job created in a transaction not yet
                        # committed is invisible to this thread's connection, and still ours.
                        self.lost = MaintenanceJob.objects.filter(pk=self.job.pk).exists()
                        if self.lost:
                            return
                except DatabaseError as exc:  # the next beat tries again; stale only after several
                    logger.warning("maintenance job %s: heartbeat failed: %s", self.job.pk, exc)
        finally:
            connections.close_all()  # this thread's connection only (connections are per thread)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


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
    if not _owned(job).update(cursor=job.cursor, stats=job.stats, heartbeat_at=job.heartbeat_at):
        raise JobTakenOver


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
    mode = SCOPE_JOB_KINDS[job.kind]
    try:
        with _Heartbeat(job) as heartbeat:
            _run_scopes(job, mode, heartbeat, on_scope)
    except JobTakenOver:
        logger.warning("maintenance job %s was taken over by another run; this one stops", job.pk)
        return None
    except BaseException as exc:
        if isinstance(exc, RESUMABLE):
            # The task retries (or re-queues itself) and resumes from the cursor.
            _owned(job).update(status=JobStatus.QUEUED)
            logger.warning("maintenance job %s paused at %s: %s", job.pk, job.cursor, type(exc).__name__)
        else:
            _owned(job).update(
                status=JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now()
            )
            logger.exception("maintenance job %s failed", job.pk)
        raise
    job.status, job.finished_at = JobStatus.DONE, timezone.now()
    if not _owned(job).update(status=job.status, finished_at=job.finished_at):
        logger.warning("maintenance job %s finished after it was taken over", job.pk)
        return None
    logger.info("maintenance job %s (%s) done: %s", job.pk, job.kind, job.stats)
    return job


def _run_scopes(
    job: MaintenanceJob, mode: Mode, heartbeat: _Heartbeat, on_scope: Callable[[ScopeReport], None] | None
) -> None:
    tools = judge_tools(judge_name=job.params.get("judge"), radius=job.params.get("radius"))
    after = ScopeKey(*job.cursor["after"]) if job.cursor.get("after") else None
    for tenant in _tenants(job):
        if after is not None and tenant.pk < after.tenant_id:
            continue
        for scope, _count in compaction_scopes(tenant=tenant, after=after, **_scope_params(job)):
            if heartbeat.lost:
                raise JobTakenOver
            report = scope_compact(tenant=tenant, scope=scope, tools=tools, mode=mode)
            _checkpoint(job, scope, report)
            if on_scope is not None:
                on_scope(report)


@transaction.atomic
def maintenance_job_retry(*, job_id: int, enqueue: bool = True) -> MaintenanceJob:
    """Put a failed job back in the queue (to a worker unless `enqueue` is off); it resumes from its
    cursor."""
    updated = MaintenanceJob.objects.filter(Q(pk=job_id), Q(status=JobStatus.FAILED)).update(
        status=JobStatus.QUEUED, error="", finished_at=None
    )
    job = MaintenanceJob.objects.get(pk=job_id)
    if updated and enqueue:
        _enqueue(job)
    return job
