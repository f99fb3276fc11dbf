"""Export one tenant's memories with their lineage as JSONL."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from memory_app.models import Memory
from memory_app.selectors.transfer import memory_export_records

from ._ops import tenant_or_none


class Command(BaseCommand):
    help = (
        "Write a tenant's memories (vectors included), changes with their sources and snapshots, "
        "kept-apart pairs and review clusters as JSONL (read-only). Import with import_memories."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", metavar="SLUG", required=True)
        parser.add_argument("--output", "-o", default="-", help="file to write (default: stdout)")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_or_none(options["tenant"])
        assert tenant is not None
        total = Memory.objects.filter(tenant=tenant).count()
        to_stdout = options["output"] == "-"
        out = sys.stdout if to_stdout else open(options["output"], "w", encoding="utf-8")  # noqa: SIM115
        try:
            with tqdm(total=total, desc="exporting", unit="memory", disable=None, file=sys.stderr) as bar:
                for record in memory_export_records(tenant=tenant):
                    out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
                    if record["type"] == "memory":
                        bar.update(1)
        finally:
            if not to_stdout:
                out.close()
        if not to_stdout:
            self.stdout.write(f"exported {total} memories of {tenant.slug} to {options['output']}")
