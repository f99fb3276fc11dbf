"""Calibrates CONTEXT_RELEVANCE_FLOOR on LoCoMo conversations 0-4 (development data only).

    python bench/relevance_floor.py --tenant-slug SLUG [--conversations 0-4] [--json]

Reads a tenant that `manage.py evaluate_conversations --tenant-slug SLUG` filled (run it with
CONTEXT_RELEVANCE_FLOOR=0 first). For every question of categories 1-4, the episodic search that
/context/all runs (the conversation's user, 60 rows) is read with each row's relevance
(SearchHit.relevance); the question counts as kept at a floor when its best-ranked evidence row is
at or above it. The same questions asked of another conversation's user stand for queries unrelated
to the memories there: the share of them that the floor leaves with nothing is the other column.
With --json the last line of stdout is one JSON object; results are also written to
bench/results/relevance_floor.json.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import django
import numpy as np
from support import benchenv

ROOT = benchenv.ROOT
RESULTS = ROOT / "bench" / "results" / "relevance_floor.json"
FLOORS = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenant-slug", required=True)
    parser.add_argument("--conversations", default="0-4")
    parser.add_argument("--locomo", default=str(ROOT.parent / "shared" / "data" / "locomo10.json"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    django.setup()

    from memory_app.management.commands.evaluate_conversations import conversation_range

    from memory_app.models import Memory, Tenant
    from memory_app.selectors.search.query import SearchOptions, memory_search
    from memory_app.selectors.search.types import SearchFilters
    from memory_eval.conversations import lineage_sources
    from memory_eval.locomo import load_locomo, user_of

    chosen = sorted(conversation_range(args.conversations))
    _, questions = load_locomo(args.locomo)
    questions = [q for q in questions if q.conversation in chosen]
    tenant = Tenant.objects.get(slug=args.tenant_slug)
    direct: dict[int, set[str]] = defaultdict(set)
    for pk, metadata in Memory.objects.filter(tenant=tenant).values_list("id", "metadata"):
        direct[pk] = set((metadata or {}).get("source_message_ids") or [])
    sources = lineage_sources(tenant, direct)

    def search(query: str, conversation: int) -> list:
        filters = SearchFilters(user_id=user_of(conversation), kind="episodic", namespace="default")
        options = SearchOptions(touch=False)
        return memory_search(tenant=tenant, query=query, filters=filters, limit=60, options=options).hits

    evidence, missing, foreign = relevances(questions, chosen=chosen, sources=sources, search=search)
    report = floor_report(args, questions=len(questions), evidence=evidence, missing=missing, foreign=foreign)
    for floor, row in report["floors"].items():
        kept, empty = row["evidence_kept"], row["foreign_empty"]
        print(f"floor {floor:>5}: evidence kept {kept:.3f}, unrelated empty {empty}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    if args.json:
        print(json.dumps(report))


def relevances(
    questions: list, *, chosen: list[int], sources: dict[int, set[str]], search: Callable[[str, int], list]
) -> tuple[list[float], int, list[float]]:
    """The relevance of each question's best-ranked evidence row, how many questions found none
    among the 60, and each question's best relevance when asked of another conversation's user."""
    evidence: list[float] = []
    missing = 0
    foreign: list[float] = []
    for question in questions:
        hits = search(question.question, question.conversation)
        found = [
            hit.relevance
            for hit in hits
            if any(sources.get(i, set()) & question.evidence for i in hit.member_ids)
        ]
        if found and found[0] is not None:
            evidence.append(found[0])
        else:
            missing += 1
        other = chosen[(chosen.index(question.conversation) + 1) % len(chosen)]
        if other != question.conversation:
            best = [hit.relevance for hit in search(question.question, other) if hit.relevance is not None]
            foreign.append(max(best, default=0.0))
    return evidence, missing, foreign


def floor_report(
    args: argparse.Namespace, *, questions: int, evidence: list[float], missing: int, foreign: list[float]
) -> dict[str, Any]:
    ev, fo = np.array(evidence), np.array(foreign)
    return {
        "tenant": args.tenant_slug,
        "conversations": args.conversations,
        "questions": questions,
        "evidence_found": len(evidence),
        "evidence_missing": missing,
        "evidence_relevance_quantiles": {
            q: round(float(np.quantile(ev, q)), 4) for q in (0.0, 0.005, 0.01, 0.02, 0.05, 0.5)
        },
        "foreign_best_relevance_quantiles": {
            q: round(float(np.quantile(fo, q)), 4) for q in (0.05, 0.25, 0.5, 0.75, 0.95, 1.0)
        },
        "floors": {
            str(floor): {
                "evidence_kept": round(float((ev >= floor).mean()), 4),
                "foreign_empty": round(float((fo < floor).mean()), 4) if len(fo) else None,
            }
            for floor in FLOORS
        },
    }


if __name__ == "__main__":
    main()
