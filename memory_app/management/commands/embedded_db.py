from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from project.database import embedded_server


class Command(BaseCommand):
    help = "Show the status of, or stop, the embedded PostgreSQL server (used when DATABASE_URL is unset)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "stop"])

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.DATABASE_URL:
            raise CommandError("DATABASE_URL is set: the embedded server is not in use.")

        server = embedded_server(settings.EMBEDDED_PG_DIR)
        if options["action"] == "stop":
            server.stop()
            self.stdout.write(f"Stopped the embedded server in {settings.EMBEDDED_PG_DIR}.")
            return
        self.stdout.write(f"Embedded PostgreSQL in {settings.EMBEDDED_PG_DIR}: {server.get_uri()}")
