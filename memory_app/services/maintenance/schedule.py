"""The periodic jobs, installed into django-celery-beat's tables (idempotent: by task name)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from memory_app.conf import maintenance_config


@dataclass(frozen=True)
class PeriodicJob:
    name: str
    task: str
    every_minutes: int


def periodic_jobs() -> list[PeriodicJob]:
    config = maintenance_config()
    return [
        PeriodicJob(
            "memory: compaction",
            "memory.compaction_periodic",
            config.compaction_interval_minutes,
        ),
        PeriodicJob(
            "memory: review-queue detection",
            "memory.review_detection_periodic",
            config.review_detection_interval_minutes,
        ),
        PeriodicJob("memory: expiry", "memory.expiry_run", config.expiry_interval_minutes),
        PeriodicJob(
            "memory: search indexes",
            "memory.search_indexes_periodic",
            config.search_indexes_interval_minutes,
        ),
        PeriodicJob(
            "memory: embeddings pending",
            "memory.embeddings_sweep",
            config.embedding_sweep_interval_minutes,
        ),
    ]


def schedule_changes() -> list[tuple[PeriodicJob, str]]:
    """What `schedule_install` would do for each job: "create", "update" or "unchanged"."""
    out = []
    for job in periodic_jobs():
        existing = PeriodicTask.objects.select_related("interval").filter(name=job.name).first()
        if existing is None:
            out.append((job, "create"))
        elif (
            existing.task != job.task
            or not existing.enabled
            or existing.interval is None
            or (existing.interval.every, existing.interval.period) != (job.every_minutes, "minutes")
        ):
            out.append((job, "update"))
        else:
            out.append((job, "unchanged"))
    return out


@transaction.atomic
def schedule_install() -> list[tuple[PeriodicJob, str]]:
    """Create or update the periodic tasks to match the settings; a second run changes nothing."""
    changes = schedule_changes()
    for job, change in changes:
        if change == "unchanged":
            continue
        interval, _ = IntervalSchedule.objects.get_or_create(
            every=job.every_minutes, period=IntervalSchedule.MINUTES
        )
        PeriodicTask.objects.update_or_create(
            name=job.name, defaults={"task": job.task, "interval": interval, "enabled": True}
        )
    return changes
