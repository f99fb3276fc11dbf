"""Rebuild the HNSW vector indexes concurrently (reads and writes continue)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from memory_app.services.maintenance.indexes import hnsw_indexes, index_drop_invalid, index_rebuild

from ._ops import human_bytes


class Command(BaseCommand):
    help = (
        "Rebuild HNSW indexes with REINDEX INDEX CONCURRENTLY (a new index is built beside the old "
        "one and swapped in; searches and inserts continue). Useful after a reindex or many "
        "deletions. Dry run by default: lists the indexes; --apply rebuilds them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--index", action="append", help="only this index (repeatable)")
        parser.add_argument("--apply", action="store_true", help="rebuild (default: dry run)")
        parser.add_argument(
            "--maintenance-work-mem", default="", help="e.g. 1GB: faster builds of big indexes"
        )
        parser.add_argument(
            "--drop-invalid", action="store_true", help="drop invalid leftovers of interrupted rebuilds"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        indexes = hnsw_indexes()
        wanted = set(options["index"] or [])
        unknown = wanted - {i.name for i in indexes}
        if unknown:
            raise CommandError(f"not HNSW indexes: {', '.join(sorted(unknown))}")
        chosen = [i for i in indexes if not wanted or i.name in wanted]
        for index in chosen:
            state = "" if index.valid else " INVALID (leftover of an interrupted rebuild)"
            self.stdout.write(f"{index.name} on {index.table}: {human_bytes(index.size_bytes)}{state}")
        if not options["apply"]:
            self.stdout.write("dry run: nothing rebuilt (use --apply)")
            return
        for index in tqdm(chosen, desc="rebuilding", unit="index", disable=None):
            started = time.perf_counter()
            if not index.valid:
                if options["drop_invalid"]:
                    index_drop_invalid(name=index.name)
                    self.stdout.write(f"dropped invalid {index.name}")
                continue
            index_rebuild(name=index.name, maintenance_work_mem=options["maintenance_work_mem"])
            self.stdout.write(f"rebuilt {index.name} in {time.perf_counter() - started:.1f} s")
