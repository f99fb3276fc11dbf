from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from project.settings_doc import documents


class Command(BaseCommand):
    help = (
        "Write the settings tables of README.md and docs/OPERATIONS.md from the declarations "
        "(project/variables.py, memory_app/conf/). Without --write: say which table is out of date "
        "and exit 1 if one is."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--write", action="store_true", help="rewrite the tables in place")

    def handle(self, *args: Any, **options: Any) -> None:
        stale = []
        for path, (current, wanted) in documents().items():
            if current == wanted:
                continue
            if options["write"]:
                path.write_text(wanted, encoding="utf-8")
                self.stdout.write(f"rewrote the settings table of {path.name}")
            else:
                stale.append(path.name)
        if stale:
            raise CommandError(f"out of date: {', '.join(stale)} (run manage.py settings_doc --write)")
        if not options["write"]:
            self.stdout.write("the settings tables match the declarations")
