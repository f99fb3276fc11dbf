"""Install the periodic jobs (compaction, review-queue detection, expiry) for celery beat."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory_app.services.maintenance.schedule import schedule_changes, schedule_install


class Command(BaseCommand):
    help = (
        "Install or update the celery-beat schedule from the *_INTERVAL_MINUTES settings. "
        "Dry run by default: prints what would change; --apply writes it (idempotent)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--apply", action="store_true", help="write the schedule")

    def handle(self, *args: Any, **options: Any) -> None:
        changes = schedule_install() if options["apply"] else schedule_changes()
        verb = "" if options["apply"] else "would "
        for job, change in changes:
            done = change if change == "unchanged" else f"{verb}{change}"
            self.stdout.write(f"{job.name}: {job.task} every {job.every_minutes} min ({done})")
        if not options["apply"]:
            self.stdout.write("dry run: nothing written (use --apply)")
