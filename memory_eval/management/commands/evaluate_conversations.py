from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from memory_app.models import Memory, Tenant
from memory_app.services.api_keys import tenant_create
from memory_eval.conversations import ask, date_resolution, lineage_sources, p50, replay
from memory_eval.locomo import load_locomo, user_of

DEFAULT_FILE = Path(settings.BASE_DIR).parent / "shared" / "data" / "locomo10.json"


def conversation_range(value: str) -> set[int]:
    """ "0-4" or "0,2,5-6" → {0, 1, 2, 3, 4}."""
    chosen: set[int] = set()
    try:
        for part in value.split(","):
            low, _, high = part.strip().partition("-")
            chosen.update(range(int(low), int(high or low) + 1))
    except ValueError as exc:
        raise CommandError(f"--conversations: expected ranges like 0-4 or 0,2,5-6, got {value!r}") from exc
    return chosen


def budgets(value: str) -> list[int]:
    try:
        found = sorted({int(v) for v in value.split(",") if v.strip()})
    except ValueError as exc:
        raise CommandError(f"--budget: expected token counts like 500,1000,2000, got {value!r}") from exc
    if not found or found[0] < 1:
        raise CommandError("--budget: give positive token counts")
    return found


class Command(BaseCommand):
    help = (
        "LoCoMo conversations replayed through the /interactions service, questions (categories 1-4) "
        "asked through the /context/all selector: evidence recall and answer containment per budget."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--locomo", default=str(DEFAULT_FILE), help="path of locomo10.json")
        parser.add_argument("--conversations", default="0-4", help="indices, e.g. 0-4 (the default)")
        parser.add_argument("--extraction", choices=["rules", "llm"], default="rules")
        parser.add_argument("--budget", default="500,1000,2000", help="token budgets, comma-separated")
        parser.add_argument(
            "--per-call", type=int, default=0, help="messages per interaction (0: one session per call)"
        )
        parser.add_argument("--tenant-slug", default="", help="keep the data in this tenant (reused if full)")
        parser.add_argument("--json", action="store_true", help="last line of output: one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["locomo"])
        if not path.exists():
            raise CommandError(f"{path} does not exist (the LoCoMo file of ../shared/data)")
        chosen = conversation_range(options["conversations"])
        sizes = budgets(options["budget"])
        turns, questions = load_locomo(path)
        turns = [t for t in turns if t.conversation in chosen]
        questions = [q for q in questions if q.conversation in chosen]
        slug = options["tenant_slug"] or f"conversations-eval-{uuid.uuid4().hex[:8]}"
        tenant = Tenant.objects.filter(slug=slug).first()
        created = tenant is None
        if tenant is None:
            tenant = tenant_create(name="conversation evaluation", slug=slug)
        try:
            report = self._evaluate(tenant, turns, questions, sizes, options)
        finally:
            if created and not options["tenant_slug"]:
                tenant.delete()
        self._print(report)
        if options["json"]:
            self.stdout.write(json.dumps(report))

    def _evaluate(
        self, tenant: Tenant, turns: list, questions: list, sizes: list[int], options: dict
    ) -> dict:
        with tqdm(total=len(turns), desc="replaying", unit="msg", disable=None, file=self.stderr) as bar:
            ingested = replay(
                tenant,
                turns,
                extraction=options["extraction"],
                per_call=options["per_call"],
                progress=bar.update,
            )
        sources = lineage_sources(tenant, ingested.sources)
        began = time.perf_counter()
        with tqdm(total=len(questions), desc="asking", unit="q", disable=None, file=self.stderr) as bar:
            tallies, latencies = ask(tenant, questions, sizes, sources, progress=bar.update)
        asked = time.perf_counter() - began
        stored = sum(ingested.outcomes.values())
        per_conversation = {
            str(c): Memory.objects.filter(tenant=tenant, user_id=user_of(c), status="active").count()
            for c in sorted({t.conversation for t in turns})
        }
        summaries = {str(size): tally.summary() for size, tally in tallies.items()}
        return {
            "file": str(options["locomo"]),
            "conversations": options["conversations"],
            "extraction": options["extraction"],
            "per_call": options["per_call"],
            "messages": ingested.messages,
            "questions": len(questions),
            "evidence_recall": {k: s["evidence_recall"] for k, s in summaries.items()},
            "answer_containment": {k: s["answer_containment"] for k, s in summaries.items()},
            "budgets": summaries,
            "memories_stored": stored,
            "outcomes": dict(ingested.outcomes),
            "share_merged": round(
                (ingested.outcomes["merged_into"] + ingested.outcomes["duplicate_of"]) / max(stored, 1), 4
            ),
            "share_queued": round(ingested.outcomes["queued_for_review"] / max(stored, 1), 4),
            "active_memories_per_conversation": per_conversation,
            "ingestion_ms_per_message": round(ingested.seconds * 1000 / max(ingested.messages, 1), 2),
            "context_all_p50_ms": p50(latencies),
            "asking_seconds": round(asked, 1),
            "dates": date_resolution(tenant, turns, questions),
            "warnings": sorted(set(ingested.warnings))[:20],
        }

    def _print(self, report: dict[str, Any]) -> None:
        self.stdout.write(
            f"{report['messages']} messages, {report['questions']} questions, "
            f"{report['memories_stored']} memories stored (merged {report['share_merged']:.1%}, "
            f"queued {report['share_queued']:.1%}), {report['ingestion_ms_per_message']} ms/message, "
            f"/context/all p50 {report['context_all_p50_ms']} ms"
        )
        for budget, summary in report["budgets"].items():
            self.stdout.write(
                f"budget {budget:>6}: evidence recall {summary['evidence_recall']:.3f}, "
                f"answer containment {summary['answer_containment']:.3f}, "
                f"mean {summary['mean_tokens']} tokens (max {summary['max_tokens_returned']})"
            )
            for name, row in summary["per_category"].items():
                self.stdout.write(
                    f"  {name:12s} {row['questions']:4d} evidence {row['evidence_recall']:.3f} "
                    f"answer {row['answer_containment']:.3f}"
                )
        dates = report["dates"]
        self.stdout.write(
            f"relative dates in evidence messages: {dates['resolved']}/"
            f"{dates['evidence_messages_with_relative_date']} resolved ({dates['share_resolved']:.1%}); "
            f"{dates['share_resolved_of_dated']:.1%} of those naming a day (without {dates['vague_only']} "
            f"only 'recently' / 'lately')"
        )
