from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory_app.selectors.stats.embeddings import embedding_stats


class Command(BaseCommand):
    help = (
        "Embedding-cache statistics per model: hits by tier, misses, provider calls, tokens and cost saved."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--model", help="only this embedding model")
        parser.add_argument("--json", action="store_true", help="one JSON object instead of a table")

    def handle(self, *args: Any, **options: Any) -> None:
        rows = embedding_stats(tenant=None, model=options.get("model"))
        if options["json"]:
            self.stdout.write(json.dumps({"models": [r.as_dict() for r in rows]}))
            return
        if not rows:
            self.stdout.write("no embedding statistics yet")
            return
        for r in rows:
            self.stdout.write(
                f"{r.model}: lookups {r.lookups} (hit rate {r.hit_rate:.1%}) | exact {r.exact_hits} | "
                f"normalized {r.normalized_hits} | near {r.near_hits} | misses {r.misses} | "
                f"provider calls {r.provider_calls} | tokens embedded {r.tokens_embedded} | "
                f"tokens avoided {r.tokens_avoided} | est. cost saved ${r.estimated_cost_saved:.4f} "
                f"at ${r.price_per_1k_tokens}/1k tokens | cache entries {r.cache_entries}"
            )
