from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.conf import kinds_config
from memory_app.llm_client import llm_configured
from memory_app.services.api_keys import tenant_create
from memory_eval.locomo import load_conversations
from memory_eval.session_summary import replay_sessions

DEFAULT_FILE = Path(settings.BASE_DIR).parent / "shared" / "data" / "locomo10.json"


class Command(BaseCommand):
    help = (
        "LoCoMo sessions replayed into short-term sessions of a small context window: the share of "
        "trimmed evidence turns whose key facts the session summary keeps (scratch tenant, deleted)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--locomo", default=str(DEFAULT_FILE), help="path of locomo10.json")
        parser.add_argument(
            "--conversations", default="0-4", help="the first N, or a range A-B (default 0-4)"
        )
        parser.add_argument(
            "--window", type=int, default=1000, help="each session's context window in tokens"
        )
        parser.add_argument("--json", action="store_true", help="last line of output: one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["locomo"])
        if not path.exists():
            raise CommandError(f"{path} does not exist (the LoCoMo file of ../shared/data)")
        turns, questions = load_conversations(path, options["conversations"])
        tenant = tenant_create(slug=f"summary-eval-{uuid.uuid4().hex[:8]}", name="summary evaluation")
        try:
            report = replay_sessions(
                tenant=tenant, turns=turns, questions=questions, window=options["window"]
            )
        finally:
            tenant.delete()
        report.update(
            {
                "file": str(path),
                "conversations": options["conversations"],
                "window": options["window"],
                "summary_max_tokens": kinds_config().session_summary_max_tokens,
                "summariser": "llm" if llm_configured() else "extractive",
            }
        )
        self.stdout.write(
            f"{report['sessions']} sessions, {report['trimmed_turns']} of {report['turns']} turns trimmed; "
            f"{report['evidence_scored']} trimmed evidence turns state their answer: key facts kept "
            f"{report['key_facts_kept_share']:.3f}, key words {report['key_word_share']:.3f} "
            f"(mean summary {report['mean_summary_tokens']} tokens)"
        )
        if options["json"]:
            self.stdout.write(json.dumps(report))
