"""Counts per tenant: memories by kind and status, models, lineage, review queue, jobs, sizes."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory_app.selectors.stats.ops import memory_stats, storage_stats

from ._ops import add_tenant_argument, human_bytes, tenants


class Command(BaseCommand):
    help = "Print memory statistics per tenant (read-only)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument("--json", action="store_true", help="one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        report: dict[str, Any] = {
            "tenants": [memory_stats(tenant=t) for t in tenants(options["tenant"])],
            **storage_stats(),
        }
        if options["json"]:
            self.stdout.write(json.dumps(report, sort_keys=True))
            return
        for stats in report["tenants"]:
            self.stdout.write(f"tenant {stats['tenant']}: {stats['total']} memories")
            for kind, statuses in sorted(stats["memories"].items()):
                parts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
                self.stdout.write(f"  {kind}: {parts}")
            self.stdout.write(f"  embedding models: {stats['embedding_models'] or '-'}")
            changes = stats["changes"]
            self.stdout.write(
                f"  changes: {changes['merges']} merges, {changes['supersedes']} supersedes, "
                f"{changes['undone']} undone; review queue: {stats['review_pending']} pending"
            )
            for scope in stats["largest_scopes"]:
                self.stdout.write(
                    f"  scope user={scope['user_id'] or '-'} namespace={scope['namespace']} "
                    f"kind={scope['kind']}: {scope['active']} active"
                )
        self.stdout.write(
            f"memory table {human_bytes(report['memory_table_total_bytes'])} "
            f"(indexes {human_bytes(report['memory_indexes_bytes'])})"
        )
