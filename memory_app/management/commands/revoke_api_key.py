from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.models import ApiKey
from memory_app.services.api_keys import KEY_PREFIX, api_key_revoke


class Command(BaseCommand):
    help = "Revoke an API key by its prefix as printed (mem_xxxxxxxxxxxx), without 'mem_', or the whole key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix", help="mem_xxxxxxxxxxxx, xxxxxxxxxxxx or the whole key")

    def handle(self, *args: Any, **options: Any) -> None:
        # a key is mem_<prefix>_<secret>; the prefix is hex, so the first "_" after mem_ ends it
        prefix = options["prefix"].strip().removeprefix(f"{KEY_PREFIX}_").split("_", 1)[0]
        key = ApiKey.objects.filter(prefix=prefix).first()
        if key is None:
            raise CommandError(f"No API key with prefix {options['prefix']!r}.")
        api_key_revoke(api_key=key)
        self.stdout.write(f"Revoked key {key.prefix} of {key.tenant.name!r}.")
