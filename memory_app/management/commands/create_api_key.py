from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from memory_app.models import Tenant
from memory_app.services.api_keys import api_key_issue


class Command(BaseCommand):
    help = "Issue a new API key for a tenant (by slug, name or id) and print it once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", metavar="SLUG", help="the tenant (its slug, name or id)")
        parser.add_argument("tenant_ref", nargs="?", metavar="TENANT", help="the same, positionally")
        parser.add_argument("--name", default="", help="label for the key")

    def handle(self, *args: Any, **options: Any) -> None:
        ref = options["tenant"] or options["tenant_ref"]
        if not ref:
            raise CommandError("Name the tenant: --tenant SLUG.")
        query = Q(slug=ref) | Q(name=ref)
        if ref.isdigit():
            query |= Q(pk=int(ref))
        tenants = list(Tenant.objects.filter(query)[:2])
        if len(tenants) != 1:
            raise CommandError(f"No single tenant matches {ref!r}; use its slug (see the admin).")
        issued = api_key_issue(tenant=tenants[0], name=options["name"])
        self.stdout.write(f"API key for {tenants[0].name!r} (shown once; store it now):")
        self.stdout.write(issued.raw_key)
