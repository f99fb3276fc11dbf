from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.management.commands._ops import add_apply_argument, applying
from memory_app.models import Tenant
from memory_app.services.maintenance.search_indexes import search_indexes_sync


class Command(BaseCommand):
    help = (
        "Give every very large user or namespace its own partial HNSW index (and drop those whose "
        "scope shrank). Safe on a live service: indexes are built CONCURRENTLY. The Celery task "
        "memory.search_indexes_periodic runs the same daily."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", metavar="SLUG", help="one tenant (default: every active tenant)")
        parser.add_argument("--min-rows", type=int, help="scope size that earns an index (default: setting)")
        add_apply_argument(parser, deprecated_dry_run=True)

    def handle(self, *args: Any, **options: Any) -> None:
        tenants = Tenant.objects.filter(is_active=True).order_by("pk")
        if options.get("tenant"):
            tenants = tenants.filter(slug=options["tenant"])
            if not tenants.exists():
                raise CommandError(f"No active tenant with slug {options['tenant']!r}")
        min_rows = options.get("min_rows")
        if min_rows is not None and min_rows < 1:
            raise CommandError("--min-rows must be at least 1")
        dry_run = not applying(self, options)
        for tenant in tenants:
            report = search_indexes_sync(tenant=tenant, min_rows=min_rows, dry_run=dry_run)
            verb, dropped = ("would create", "would drop") if dry_run else ("created", "dropped")
            self.stdout.write(
                f"{tenant.slug}: {verb} {len(report.created)}, {dropped} {len(report.dropped)}, "
                f"kept {len(report.kept)}"
            )
            for name in report.created:
                self.stdout.write(f"  + {name}")
            for name in report.dropped:
                self.stdout.write(f"  - {name}")
        if dry_run:
            self.stdout.write("dry run: nothing changed; --apply makes the changes")
