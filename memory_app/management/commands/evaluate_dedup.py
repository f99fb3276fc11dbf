from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.services.dedup_evaluation import (
    DECISIONS,
    LABELS,
    evaluate_pairs,
    evaluation_report,
    load_pairs,
)

RATES = (
    "false_merge_rate",
    "wrong_supersede_rate",
    "duplicate_merge_rate",
    "duplicate_handled_rate",
    "update_supersede_rate",
    "refine_ok_rate",
    "review_rate",
)


class Command(BaseCommand):
    help = (
        "Store each labeled pair (existing, then new) through memory_store in a scratch tenant and count "
        "the decisions per label; prints the rates beside the cosine-threshold (0.35) baseline."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--pairs", required=True, help="JSONL with id, existing, new, label")
        parser.add_argument("--judge", choices=["offline", "llm"], default="offline")
        parser.add_argument("--json", action="store_true", help="last line of stdout: one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["pairs"])
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        try:
            pairs = load_pairs(path)
        except (ValueError, KeyError) as exc:
            raise CommandError(f"{path}: {exc}") from exc
        if not pairs:
            raise CommandError(f"{path} holds no pairs")
        results, seconds = evaluate_pairs(pairs=pairs, judge=options["judge"])
        report = evaluation_report(results, judge=options["judge"], seconds=seconds)
        self._print(report)
        if options["json"]:
            self.stdout.write(json.dumps(report, sort_keys=True))

    def _print(self, report: dict[str, Any]) -> None:
        base = report["baseline"]
        self.stdout.write(
            f"{report['pairs']} pairs, judge {report['judge']}, {report['ms_per_pair']} ms/pair"
        )
        self.stdout.write(f"{'rate':<24}{'store path':>12}{'cosine<0.35':>14}")
        for name in RATES:
            self.stdout.write(f"{name:<24}{_fmt(report[name]):>12}{_fmt(base[name]):>14}")
        self.stdout.write("confusion (label → decision), store path:")
        self.stdout.write(f"{'':<10}" + "".join(f"{d:>10}" for d in DECISIONS))
        for label in LABELS:
            row = report["confusion"][label]
            self.stdout.write(f"{label:<10}" + "".join(f"{row[d]:>10}" for d in DECISIONS))


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
