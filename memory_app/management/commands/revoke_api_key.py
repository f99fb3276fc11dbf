from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.models import ApiKey
from memory_app.services.api_keys import api_key_revoke


class Command(BaseCommand):
    help = "Revoke an API key by its prefix (the part after 'mem_')."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix")

    def handle(self, *args: Any, **options: Any) -> None:
        key = ApiKey.objects.filter(prefix=options["prefix"]).first()
        if key is None:
            raise CommandError(f"No API key with prefix {options['prefix']!r}.")
        api_key_revoke(api_key=key)
        self.stdout.write(f"Revoked key {key.prefix} of {key.tenant.name!r}.")
