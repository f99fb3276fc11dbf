from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.models import Tenant
from memory_app.services.maintenance.expiry import memories_expire


class Command(BaseCommand):
    help = "Expire memories past their TTL or expires_at, cap per user, purge long-expired text."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="count only; change nothing")
        parser.add_argument("--tenant", help="tenant slug (default: every tenant)")
        parser.add_argument("--json", action="store_true", help="print the report as one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"no tenant with slug {options['tenant']!r}")
        report = memories_expire(tenant=tenant, dry_run=options["dry_run"])
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict()))
            return
        prefix = "would " if report.dry_run else ""
        expired = ", ".join(f"{k} {v}" for k, v in report.expired.items())
        self.stdout.write(
            f"{prefix}expire: {expired}; {prefix}cap: {report.capped}; {prefix}purge: {report.purged}; "
            f"{prefix}delete procedures: {report.procedures}, sessions: {report.sessions}"
        )
