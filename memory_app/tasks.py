"""Celery tasks: thin wrappers taking ids, around the same services the commands call.

Every task is idempotent (a finished job is not run again; expiry of expired rows changes nothing),
retries database outages with exponential backoff, and runs under the soft and hard time limits of
the settings. Without CELERY_BROKER_URL they run inline in the caller (CELERY_TASK_ALWAYS_EAGER).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError

from memory_app.conf import maintenance_config
from memory_app.errors import ApplicationError
from memory_app.models import Tenant
from memory_app.models.jobs import JobKind
from memory_app.services.maintenance.expiry import memories_expire
from memory_app.services.maintenance.jobs import RUN_TASK, maintenance_job_active, maintenance_job_schedule
from memory_app.services.maintenance.jobs import maintenance_job_run as run_job
from memory_app.services.maintenance.search_indexes import search_indexes_sync
from memory_app.services.store.embedding_backfill import FILL_TASK, embedding_backfill_pending_ids
from memory_app.services.store.embedding_backfill import memory_embeddings_fill as fill

logger = logging.getLogger(__name__)

_LIMITS: dict[str, Any] = {
    "soft_time_limit": settings.CELERY_TASK_SOFT_TIME_LIMIT,
    "time_limit": settings.CELERY_TASK_TIME_LIMIT,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": True,
    "retry_backoff_max": 600,
    "retry_jitter": True,
    "max_retries": settings.TASK_MAX_RETRIES,
    # Acknowledged when finished, and put back in the queue when the worker process dies under it
    # (OOM kill, kill -9): the job is claimed again once its heartbeat is stale and resumes.
    "acks_late": True,
    "reject_on_worker_lost": True,
}


@shared_task(bind=True, name=RUN_TASK, **_LIMITS)
def maintenance_job_run(self: Any, job_id: int) -> dict[str, Any] | None:
    """Run or resume one compaction / review-detection job.

    Idempotent under redelivery: a finished job is not run again, and a job still claimed by a run
    whose heartbeat is fresh is looked at again once it could have gone stale (the worker that had it
    may have died an instant ago), so a redelivered message is never simply dropped.
    """
    try:
        job = run_job(job_id=job_id)
    except SoftTimeLimitExceeded:
        # The job saved its cursor and is queued again: continue in a fresh task.
        maintenance_job_run.apply_async((job_id,), countdown=1)
        return None
    if job is None and not self.request.is_eager and maintenance_job_active(job_id=job_id):
        maintenance_job_run.apply_async((job_id,), countdown=maintenance_config().job_stale_seconds)
    return None if job is None else dict(job.stats)


def _schedule_all(kind: str) -> int:
    created = 0
    for tenant in Tenant.objects.filter(is_active=True).order_by("pk"):
        created += maintenance_job_schedule(kind=kind, tenant=tenant) is not None
    logger.info("scheduled %d %s job(s)", created, kind)
    return created


@shared_task(name="memory.compaction_periodic", **_LIMITS)
def compaction_periodic() -> int:
    """One compaction job per active tenant, unless one is alive (a stale one is taken over)."""
    return _schedule_all(JobKind.COMPACTION)


@shared_task(name="memory.review_detection_periodic", **_LIMITS)
def review_detection_periodic() -> int:
    """Compaction in queue-only mode: likely duplicates go to the review queue, nothing is merged."""
    return _schedule_all(JobKind.REVIEW_DETECTION)


@shared_task(name="memory.expiry_run", **_LIMITS)
def expiry_run(tenant_id: int | None = None) -> dict[str, Any]:
    """Expire memories past `expires_at` (one tenant or all); running it twice expires nothing more."""
    tenant = None if tenant_id is None else Tenant.objects.filter(pk=tenant_id).first()
    if tenant_id is not None and tenant is None:
        logger.warning("expiry: tenant %s does not exist", tenant_id)
        return {}
    report = memories_expire(tenant=tenant)
    result = dataclasses.asdict(report) if dataclasses.is_dataclass(report) else {"report": str(report)}
    logger.info("expiry (tenant %s): %s", tenant_id or "all", result)
    return result


@shared_task(
    name="memory.search_indexes_periodic",
    **{
        **_LIMITS,
        "soft_time_limit": maintenance_config().search_indexes_time_limit_seconds,
        "time_limit": maintenance_config().search_indexes_time_limit_seconds + 300,
    },
)
def search_indexes_periodic() -> dict[str, int]:
    """Per active tenant: a partial HNSW index for each scope that grew large, none for those that
    shrank. Idempotent: a second run finds every index in place and changes nothing."""
    totals = {"created": 0, "dropped": 0, "kept": 0}
    for tenant in Tenant.objects.filter(is_active=True).order_by("pk"):
        report = search_indexes_sync(tenant=tenant)
        for key in totals:
            totals[key] += len(getattr(report, key))
    logger.info("search indexes: %s", totals)
    return totals


@shared_task(
    bind=True,
    name=FILL_TASK,
    **{
        **_LIMITS,
        # A provider outage is what this task waits out: retry it like a database outage.
        "autoretry_for": (OperationalError, InterfaceError, ApplicationError),
        "soft_time_limit": 300,
        "time_limit": 360,
    },
)
def memory_embeddings_fill(self: Any, memory_ids: list[int]) -> int:
    """Embed the memories among `memory_ids` that were stored without a vector (idempotent)."""
    return fill(memory_ids=memory_ids)


@shared_task(name="memory.embeddings_sweep", **_LIMITS)
def memory_embeddings_sweep() -> int:
    """Queue the fill for every active memory still without a vector (a lost task, a broker outage)."""
    ids = embedding_backfill_pending_ids(limit=maintenance_config().embedding_sweep_batch)
    for start in range(0, len(ids), 100):
        memory_embeddings_fill.delay(ids[start : start + 100])
    if ids:
        logger.info("embedding sweep: %d memories without a vector queued", len(ids))
    return len(ids)
