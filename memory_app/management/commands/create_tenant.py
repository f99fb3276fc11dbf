from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.errors import ApplicationError
from memory_app.services.api_keys import api_key_issue, tenant_create


class Command(BaseCommand):
    help = "Create a tenant and print its first API key (shown once; only its hash is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="tenant name")
        parser.add_argument("--slug", help="URL-safe identifier (default: from the name)")
        parser.add_argument("--key-name", default="default", help="label of the first API key")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            tenant = tenant_create(name=options["name"], slug=options.get("slug"))
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        issued = api_key_issue(tenant=tenant, name=options["key_name"])
        self.stdout.write(f"Created tenant {tenant.name!r} (slug {tenant.slug}, id {tenant.pk}).")
        self.stdout.write("API key (shown once; store it now):")
        self.stdout.write(issued.raw_key)
