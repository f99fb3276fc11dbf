from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.services.maintenance.citus import citus_distribute, is_citus


class Command(BaseCommand):
    help = (
        "Turn a migrated database on a Citus coordinator into the distributed layout: tenant-owned "
        "tables distributed by tenant_id and co-located, shared tables as reference tables "
        "(docs/SCALING.md). Idempotent: tables Citus already manages are left alone."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--shard-count", type=int, default=32, help="shards per distributed table (default 32)"
        )
        parser.add_argument("--dry-run", action="store_true", help="report the layout, change nothing")
        parser.add_argument(
            "--if-citus",
            action="store_true",
            help="do nothing on a database without the citus extension (docker-compose's migrate step)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["shard_count"] < 1:
            raise CommandError("--shard-count must be at least 1")
        if options["if_citus"] and not is_citus():
            self.stdout.write("not a Citus coordinator: nothing to distribute")
            return
        try:
            layout = citus_distribute(shard_count=options["shard_count"], dry_run=options["dry_run"])
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        verb = "would distribute" if options["dry_run"] else "distributed"
        self.stdout.write(f"{verb} by tenant_id: {', '.join(layout.distributed) or 'nothing new'}")
        self.stdout.write(f"reference tables: {', '.join(layout.reference) or 'nothing new'}")
        if layout.local:
            self.stdout.write(f"left on the coordinator (tenant may be NULL): {', '.join(layout.local)}")
        if layout.already:
            self.stdout.write(f"already managed by Citus: {len(layout.already)} tables")
        for line in layout.widened:
            self.stdout.write(f"  key widened: {line}")
        for line in layout.composite_fks:
            self.stdout.write(f"  foreign key made composite: {line}")
        for line in layout.dropped_fks:
            self.stdout.write(f"  foreign key dropped (Citus cannot keep it; the services check it): {line}")
