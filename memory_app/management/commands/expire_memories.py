from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.management.commands._ops import add_apply_argument, applying
from memory_app.models import Tenant
from memory_app.services.maintenance.expiry import memories_expire


class Command(BaseCommand):
    help = "Expire memories past their TTL or expires_at, cap per user, purge long-expired text."

    def add_arguments(self, parser: CommandParser) -> None:
        add_apply_argument(parser, deprecated_dry_run=True)
        parser.add_argument("--tenant", metavar="SLUG", help="one tenant (default: every tenant)")
        parser.add_argument("--json", action="store_true", help="print the report as one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"no tenant with slug {options['tenant']!r}")
        report = memories_expire(tenant=tenant, dry_run=not applying(self, options))
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict()))
            return
        prefix = "would " if report.dry_run else ""
        expired = ", ".join(f"{k} {v}" for k, v in report.expired.items())
        self.stdout.write(
            f"{prefix}expire: {expired}; {prefix}cap: {report.capped}; {prefix}purge: {report.purged}; "
            f"{prefix}delete procedures: {report.procedures}, sessions: {report.sessions}"
        )
        if report.dry_run:
            self.stdout.write("dry run: nothing changed; --apply makes the changes")
