from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.extraction import extract_memories
from memory_eval.extraction import score_extractor

DEFAULT_FILE = Path(settings.BASE_DIR) / "tests" / "data" / "extraction_labeled.jsonl"


class Command(BaseCommand):
    help = "Precision and recall of memory extraction on labeled utterances (JSON lines)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--file", default=str(DEFAULT_FILE))
        parser.add_argument("--mode", choices=["rules", "llm", "auto"], default="rules")
        parser.add_argument("--threshold", type=float, default=0.5, help="content-word Jaccard to match")
        parser.add_argument("--errors", action="store_true", help="list the misses and false positives")
        parser.add_argument("--json", action="store_true", help="last line of output: one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        methods: set[str] = set()

        def extract(text: str) -> list:
            result = extract_memories(text, mode=options["mode"])
            methods.add(result.method)
            return result.memories

        score = score_extractor(rows, extract, threshold=options["threshold"])
        report = {
            "file": str(path),
            "mode": options["mode"],
            "methods_used": sorted(methods),
            **score.as_dict(),
        }
        if options["errors"] or not options["json"]:
            for error in score.errors:
                self.stdout.write(
                    f"#{error['id']} {error['text']!r}: missed {error['missed']}, "
                    f"extra {error['false_positives']}"
                )
        if options["json"]:
            self.stdout.write(json.dumps(report))
        else:
            self.stdout.write(
                f"{report['utterances']} utterances, {report['expected']} expected memories: precision "
                f"{report['precision']:.3f}, recall {report['recall']:.3f}, F1 {report['f1']:.3f}, "
                f"type accuracy {report['type_accuracy']}"
            )
