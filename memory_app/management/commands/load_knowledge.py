from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from memory_app.errors import ApplicationError
from memory_app.management.commands._ops import add_apply_argument
from memory_app.models import Tenant
from memory_app.services.kinds.knowledge import knowledge_load, knowledge_parse


class Command(BaseCommand):
    help = "Load semantic facts (a JSON or YAML list) into a tenant's shared knowledge base."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--tenant", metavar="SLUG", required=True, help="tenant to load into")
        add_apply_argument(parser)
        parser.add_argument("--namespace", default="default")
        parser.add_argument("--batch-size", type=int, default=64)
        parser.add_argument("--json", action="store_true", help="print the report as one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant with slug {options['tenant']!r}")
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be >= 1")
        try:
            facts = knowledge_parse(path.read_text(encoding="utf-8"), suffix=path.suffix.lower())
        except ValueError as exc:  # json.JSONDecodeError and yaml errors alike
            raise CommandError(f"{path}: {exc}") from exc
        except Exception as exc:
            raise CommandError(f"{path}: not valid JSON or YAML ({exc})") from exc
        with tqdm(total=len(facts), unit="fact", disable=options["json"], file=self.stderr) as bar:
            try:
                report = knowledge_load(
                    tenant=tenant,
                    facts=facts,
                    namespace=options["namespace"],
                    batch_size=options["batch_size"],
                    progress=bar.update,
                    dry_run=not options["apply"],
                )
            except ApplicationError as exc:
                raise CommandError(exc.message) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict()))
            return
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items())) or "nothing stored"
        self.stdout.write(f"{report.total} facts: {outcomes}; invalid {len(report.invalid)}")
        for bad in report.invalid[:20]:
            self.stdout.write(f"  fact #{bad['index']}: {bad['error']}")
        if report.dry_run:
            self.stdout.write("dry run: nothing stored; --apply stores the valid facts")
