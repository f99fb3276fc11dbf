from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from memory_eval.dedup import (
    DECISIONS,
    LABELS,
    evaluate_pairs,
    evaluation_report,
    load_pairs,
    pair_decisions,
)
from memory_eval.dedup_stream import OUTCOMES, evaluate_stream
from memory_eval.scenarios import (
    evaluate_scenarios,
    load_scenarios,
    scenario_decisions,
    scenario_report,
)
from memory_eval.stream import SCOPES, SOURCES, load_stream, parse_conversations

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
        "the decisions per label; prints the rates beside the cosine-threshold (0.35) baseline. "
        "With --stream: store a LoCoMo stream in order (dedup on and off) and report outcome shares, "
        "the share of facts still active and fact-level recall@5/@10."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--pairs", help="JSONL with id, existing, new, label")
        source.add_argument("--stream", help="a LoCoMo file (locomo10.json): store its facts in order")
        source.add_argument(
            "--scenarios", help="JSONL with id, family, expect, texts: store each sequence for a fresh user"
        )
        parser.add_argument(
            "--conversations",
            default="0-4",
            help="stream: conversation indices, e.g. 0-4 or 0,2 (default 0-4, the development set)",
        )
        parser.add_argument("--scope", choices=SCOPES, default="speaker", help="stream: one scope per ...")
        parser.add_argument(
            "--source", choices=SOURCES, default="observations", help="stream: what is stored"
        )
        parser.add_argument("--judge", choices=["offline", "llm"], default="offline")
        parser.add_argument(
            "--examples",
            type=int,
            default=25,
            help="stream: merges quoted with both texts in the JSON (default 25; 0 for a held-out "
            "check such as conversations 5-9, whose examples are not to be read)",
        )
        parser.add_argument("--json", action="store_true", help="last line of stdout: one JSON object")
        parser.add_argument(
            "--decisions",
            metavar="FILE",
            help="write one JSON line per pair (per stored text of a scenario, per fact of a stream) "
            "with its input, outcome, relation and confidence, to compare two versions of the judge",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["stream"]:
            self._stream(options)
            return
        if options["scenarios"]:
            self._scenarios(options)
            return
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
        _write_decisions(options["decisions"], pair_decisions(results))
        self._print(report)
        if options["json"]:
            self.stdout.write(json.dumps(report, sort_keys=True))

    def _stream(self, options: dict[str, Any]) -> None:
        path = Path(options["stream"])
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        try:
            conversations = parse_conversations(options["conversations"])
            facts, questions = load_stream(path, source=options["source"], conversations=conversations)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise CommandError(f"{path}: {exc}") from exc
        if not facts:
            raise CommandError(f"{path} holds no {options['source']} for conversations {conversations}")
        if options["examples"] < 0:
            raise CommandError("--examples must be 0 or more")

        def progress(items: Any, label: str) -> Any:
            return tqdm(items, desc=label, unit="item", disable=None)

        # One line per search about its result clusters would bury the progress bars.
        logging.getLogger("memory_app.selectors.search.query").setLevel(logging.WARNING)
        decisions: list[dict[str, Any]] = []
        report = evaluate_stream(
            facts=facts,
            questions=questions,
            scope=options["scope"],
            judge=options["judge"],
            progress=progress,
            examples=options["examples"],
            decisions=decisions,
        )
        _write_decisions(options["decisions"], decisions)
        report.update(
            {
                "file": str(path),
                "conversations": conversations,
                "source": options["source"],
                "judge": options["judge"],
            }
        )
        self.stdout.write(
            f"{report['facts']} {report['source']} of conversations {options['conversations']}, "
            f"scope {report['scope']}, judge {report['judge']}, {report['ms_per_store']} ms/store"
        )
        for name in OUTCOMES:
            self.stdout.write(
                f"  {name:<20}{report['outcomes'][name]:>6}{report['outcome_shares'][name]:>9.1%}"
            )
        self.stdout.write(f"  still active        {report['active_share']:>15.1%}")
        self.stdout.write(f"  merges that drop a word of a source: {report['lossy_merges']}")
        self.stdout.write(
            f"recall over {report['questions']} questions: "
            f"@5 {report['recall_at_5']:.3f} / {report['recall_at_5_no_dedup']:.3f} without dedup, "
            f"@10 {report['recall_at_10']:.3f} / {report['recall_at_10_no_dedup']:.3f} without dedup"
        )
        if options["json"]:
            self.stdout.write(json.dumps(report, sort_keys=True))

    def _scenarios(self, options: dict[str, Any]) -> None:
        path = Path(options["scenarios"])
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        try:
            scenarios = load_scenarios(path)
        except (ValueError, KeyError, TypeError) as exc:
            raise CommandError(f"{path}: {exc}") from exc
        if not scenarios:
            raise CommandError(f"{path} holds no scenarios")
        started = time.perf_counter()
        results = evaluate_scenarios(scenarios=scenarios, judge=options["judge"])
        report = scenario_report(results, seconds=time.perf_counter() - started)
        _write_decisions(options["decisions"], scenario_decisions(results))
        report.update({"file": str(path), "judge": options["judge"]})
        self.stdout.write(
            f"{report['scenarios']} scenarios, judge {report['judge']}, {report['ms_per_scenario']} ms each"
        )
        self.stdout.write(f"{'group':<28}{'n':>4}{'handled':>10}{'acted':>8}")
        for name, row in report["groups"].items():
            self.stdout.write(f"{name:<28}{row['scenarios']:>4}{row['handled']:>10.3f}{row['acted']:>8.3f}")
        self.stdout.write("acted: kept without review (keep_all), merged (collapse), superseded (update)")
        for failure in report["failures"]:
            self.stdout.write(f"  {failure['id']} {failure['family']}: {failure['outcomes']}")
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


def _write_decisions(path: str | None, rows: list[dict[str, Any]]) -> None:
    if path:
        Path(path).write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
