from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.embeddings import embed_texts
from memory_app.models import Memory, Tenant
from memory_app.selectors.search.query import SearchFilters, SearchOptions, TimeQuery, memory_search
from memory_app.selectors.search.time_window import TIME_MODES
from memory_app.services.api_keys import tenant_create
from memory_app.services.rows.memories import memory_insert_many
from memory_eval.locomo import (
    RecallTally,
    asked_at,
    load_conversations,
    memory_items,
    user_of,
)

DEFAULT_FILE = Path(settings.BASE_DIR).parent / "shared" / "data" / "locomo10.json"
MODES = ("hybrid", "vector", "fulltext")


class Command(BaseCommand):
    help = "LoCoMo recall@1/5/10/20 of memory_search (one scratch tenant, one user per conversation)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--locomo", default=str(DEFAULT_FILE), help="path of locomo10.json")
        parser.add_argument("--mode", choices=[*MODES, "all"], default="all", help="default: every mode")
        parser.add_argument(
            "--conversations",
            default="0",
            help="only the first N (0 = all), or a range A-B of conversation numbers (5-9)",
        )
        parser.add_argument("--context-radius", type=int, default=2, help="neighbour turns in `context`")
        parser.add_argument("--no-speaker", action="store_true", help="index turns without the speaker")
        parser.add_argument("--lexical", choices=["bm25", "ts_rank"], default=None)
        parser.add_argument("--fusion", choices=["weighted", "rrf"], default=None)
        parser.add_argument("--vector-weight", type=float, default=None)
        parser.add_argument("--no-dedup", action="store_true", help="turn load-time dedup off")
        parser.add_argument("--mmr", action="store_true", help="turn MMR on")
        parser.add_argument(
            "--query-time",
            choices=TIME_MODES,
            default=None,
            help="a time expression in a question: boost, filter or off (default SEARCH_QUERY_TIME); "
            "`now` is the conversation's last session date",
        )
        parser.add_argument("--tenant-slug", default="", help="reuse (or create and keep) this tenant")
        parser.add_argument("--json", action="store_true", help="last line of output: one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["locomo"])
        if not path.exists():
            raise CommandError(f"{path} does not exist (the LoCoMo file of ../shared/data)")
        turns, questions = load_conversations(path, options["conversations"])
        slug = options["tenant_slug"] or f"locomo-eval-{uuid.uuid4().hex[:8]}"
        tenant = Tenant.objects.filter(slug=slug).first()
        created = tenant is None
        if tenant is None:
            tenant = tenant_create(name="LoCoMo evaluation", slug=slug)
        try:
            started = time.perf_counter()
            if not Memory.objects.filter(tenant=tenant).exists():
                items = memory_items(
                    turns,
                    context_radius=options["context_radius"],
                    speaker=not options["no_speaker"],
                    embed=lambda texts: embed_texts(texts, tenant=None),
                )
                memory_insert_many(tenant=tenant, items=items)
            self.stderr.write(f"loaded {len(turns)} turns in {time.perf_counter() - started:.1f}s")
            dia_of = {
                pk: set(ids or [])
                for pk, ids in Memory.objects.filter(tenant=tenant).values_list("id", "metadata__dia_ids")
            }
            search_options = SearchOptions(
                deduplicate=False if options["no_dedup"] else None,
                mmr=True if options["mmr"] else None,
                lexical=options["lexical"],
                fusion=options["fusion"],
                vector_weight=options["vector_weight"],
            )
            modes = MODES if options["mode"] == "all" else (options["mode"],)
            report: dict[str, Any] = {"file": str(path), "turns": len(turns), "modes": {}}
            report["query_time"] = options["query_time"]
            times = {c: TimeQuery(now=now, mode=options["query_time"]) for c, now in asked_at(turns).items()}
            for mode in modes:
                report["modes"][mode] = self._run(tenant, questions, mode, search_options, dia_of, times)
                self._print(mode, report["modes"][mode])
        finally:
            if created and not options["tenant_slug"]:
                tenant.delete()
        default = report["modes"][modes[0]]
        report.update(
            {key: default[key] for key in ("questions", *(f"recall_at_{k}" for k in (1, 5, 10, 20)))}
        )
        report["mode"] = modes[0]
        if options["json"]:
            self.stdout.write(json.dumps(report))

    def _run(
        self,
        tenant: Tenant,
        questions: list,
        mode: str,
        options: SearchOptions,
        dia_of: dict[int, set[str]],
        times: dict[int, TimeQuery],
    ) -> dict[str, Any]:
        tally = RecallTally()
        started = time.perf_counter()
        windows = 0
        for question in questions:
            result = memory_search(
                tenant=tenant,
                query=question.question,
                filters=SearchFilters(user_id=user_of(question.conversation)),
                limit=20,
                mode=mode,
                options=options,
                time_query=times.get(question.conversation),
            )
            windows += result.time_window is not None
            ranked = [set().union(*(dia_of.get(i, set()) for i in hit.member_ids)) for hit in result.hits]
            tally.add(question.category, ranked, question.evidence)
        summary = tally.summary()
        summary["questions_with_time_window"] = windows
        summary["ms_per_question"] = round((time.perf_counter() - started) * 1000 / max(len(questions), 1), 1)
        return summary

    def _print(self, mode: str, summary: dict[str, Any]) -> None:
        figures = " ".join(f"@{k}={summary[f'recall_at_{k}']:.3f}" for k in (1, 5, 10, 20))
        self.stdout.write(
            f"{mode:9s} {summary['questions']} questions {figures} ({summary['ms_per_question']} ms/q)"
        )
        for name, row in summary["per_category"].items():
            cats = " ".join(f"@{k}={row[f'recall_at_{k}']:.3f}" for k in (1, 5, 10, 20))
            self.stdout.write(f"  {name:12s} {row['questions']:4d} {cats}")
