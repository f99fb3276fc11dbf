"""Store-time dedup measured on a real stream (`manage.py evaluate_dedup --stream`).

The facts of a LoCoMo stream (evaluation.stream) are stored one by one, in order, through
`memory_store` with the default settings, as an agent calling the API would; a second scratch tenant
gets the same stream with `deduplicate=false`. Reported: the share of each outcome, the share of input
facts whose text is still active, and fact-level recall: each question is searched with the default
`memory_search` over its conversation's namespace, and a result is a hit when a fact it stands for came
from a dialog id of the question's evidence. A merge result stands for the ids of all its sources (the
outcomes say which rows a merge consumed, so the ids are carried along them), and a search entry for
those of every member it collapsed.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory_app.embeddings import embed_texts
from memory_app.judge.base import RelationJudge
from memory_app.judge.llm import LLMJudge
from memory_app.judge.merge import lost_facts
from memory_app.models import Memory, Tenant
from memory_app.models.memory import MemoryStatus
from memory_app.overrides import StoreOverrides
from memory_app.selectors.search.query import SearchFilters, memory_search
from memory_app.services.api_keys import tenant_create
from memory_app.services.store.types import MemoryInput, StoreOutcome
from memory_app.services.store.write import memory_store
from memory_app.text import normalized_hash
from memory_eval.locomo import Question
from memory_eval.stream import StreamFact, namespace_of, user_of

OUTCOMES = ("created", "duplicate_of", "merged_into", "superseded", "queued_for_review")
KS = (5, 10)
Progress = Callable[[Iterable[Any], str], Iterable[Any]]


def _no_progress(items: Iterable[Any], _label: str) -> Iterable[Any]:
    return items


@dataclass
class StreamRun:
    """One tenant's pass over the stream: the outcomes, and the dialog ids each stored row stands for."""

    tenant: Tenant
    outcomes: list[StoreOutcome]
    dia_ids: dict[int, set[str]]
    seconds: float


def _track(dia_ids: dict[int, set[str]], outcome: StoreOutcome, fact: StreamFact) -> None:
    ids = set(fact.dia_ids)
    if outcome.outcome == "merged_into":
        for source in outcome.related_ids:
            ids |= dia_ids.get(source, set())
    dia_ids.setdefault(outcome.memory_id, set()).update(ids)


def stream_store(
    *,
    tenant: Tenant,
    facts: list[StreamFact],
    vectors: Any,
    scope: str,
    options: StoreOverrides,
    judge: RelationJudge | None = None,
    progress: Progress = _no_progress,
    label: str = "storing",
) -> StreamRun:
    outcomes: list[StoreOutcome] = []
    dia_ids: dict[int, set[str]] = {}
    started = time.perf_counter()
    for fact, vector in progress(list(zip(facts, vectors, strict=True)), label):
        item = MemoryInput(
            text=fact.text,
            user_id=user_of(fact, scope),
            namespace=namespace_of(fact.conversation),
            session_id=f"session-{fact.session}",
            event_date=fact.date,
            source="locomo",
            metadata={"dia_ids": sorted(fact.dia_ids)},
            embedding=vector,
        )
        [outcome] = memory_store(tenant=tenant, items=[item], options=options, judge=judge)
        _track(dia_ids, outcome, fact)
        outcomes.append(outcome)
    return StreamRun(tenant, outcomes, dia_ids, time.perf_counter() - started)


def active_share(*, tenant: Tenant, facts: list[StreamFact], scope: str) -> float:
    """The share of input facts whose text is an active memory of their scope."""
    active = set(
        Memory.objects.filter(tenant=tenant, status=MemoryStatus.ACTIVE).values_list(
            "user_id", "namespace", "text_hash"
        )
    )
    kept = sum(
        (user_of(f, scope), namespace_of(f.conversation), normalized_hash(f.text)) in active for f in facts
    )
    return round(kept / len(facts), 4) if facts else 0.0


def stream_recall(
    *, run: StreamRun, questions: list[Question], progress: Progress = _no_progress, label: str = "searching"
) -> dict[str, float]:
    hits = dict.fromkeys(KS, 0)
    for question in progress(questions, label):
        result = memory_search(
            tenant=run.tenant,
            query=question.question,
            filters=SearchFilters(namespace=namespace_of(question.conversation)),
            limit=max(KS),
        )
        ranked = [set().union(*(run.dia_ids.get(i, set()) for i in hit.member_ids)) for hit in result.hits]
        for k in KS:
            if any(ids & question.evidence for ids in ranked[:k]):
                hits[k] += 1
    n = max(len(questions), 1)
    return {f"recall_at_{k}": round(hits[k] / n, 4) for k in KS}


def outcome_shares(outcomes: list[StoreOutcome]) -> tuple[dict[str, int], dict[str, float]]:
    counts: Counter[str] = Counter(o.outcome for o in outcomes)
    total = max(len(outcomes), 1)
    return (
        {name: counts[name] for name in OUTCOMES},
        {name: round(counts[name] / total, 4) for name in OUTCOMES},
    )


def evaluate_stream(
    *,
    facts: list[StreamFact],
    questions: list[Question],
    scope: str,
    judge: str | None = None,
    progress: Progress = _no_progress,
    examples: int = 25,
    decisions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Both passes (dedup on, dedup off) in scratch tenants that are deleted afterwards, even on error.

    `examples`: how many merges and supersedes the report quotes, both texts each (`merges`); 0
    for a held-out check, whose examples must not be read. `decisions`, when given, receives one row
    per stored fact (stream_decisions).

    With the LLM judge, one instance serves the whole run (the store would make one per item) so
    the report can say how often it fell back to the offline judge.
    """

    llm = LLMJudge() if judge == "llm" else None

    vectors: np.ndarray | list[np.ndarray] = (
        embed_texts([f.text for f in facts], tenant=None) if facts else []
    )
    tenants = [
        tenant_create(name=f"evaluate_dedup stream {name}", slug=f"eval-stream-{uuid.uuid4().hex[:12]}")
        for name in ("dedup", "plain")
    ]
    try:
        dedup = stream_store(
            tenant=tenants[0],
            facts=facts,
            vectors=vectors,
            scope=scope,
            options=StoreOverrides(judge=judge),
            judge=llm,
            progress=progress,
            label="storing (dedup)",
        )
        plain = stream_store(
            tenant=tenants[1],
            facts=facts,
            vectors=vectors,
            scope=scope,
            options=StoreOverrides(deduplicate=False),
            progress=progress,
            label="storing (no dedup)",
        )
        counts, shares = outcome_shares(dedup.outcomes)
        report: dict[str, Any] = {
            "facts": len(facts),
            "questions": len(questions),
            "scope": scope,
            "judge": judge or "default",
            "outcomes": counts,
            "outcome_shares": shares,
            "merge_share": round(
                sum(shares[name] for name in ("merged_into", "superseded", "duplicate_of")), 4
            ),
            "review_share": shares["queued_for_review"],
            "active_share": active_share(tenant=tenants[0], facts=facts, scope=scope),
            "active_share_no_dedup": active_share(tenant=tenants[1], facts=facts, scope=scope),
            "ms_per_store": round(1000 * dedup.seconds / max(len(facts), 1), 2),
            "ms_per_store_no_dedup": round(1000 * plain.seconds / max(len(facts), 1), 2),
        }
        report.update(
            stream_recall(run=dedup, questions=questions, progress=progress, label="search (dedup)")
        )
        plain_recall = stream_recall(
            run=plain, questions=questions, progress=progress, label="search (no dedup)"
        )
        report.update({f"{key}_no_dedup": value for key, value in plain_recall.items()})
        if llm is not None:
            report.update(llm_calls=llm.calls, llm_fallbacks=llm.fallbacks)
        report["lossy_merges"] = lossy_merges(dedup, facts)
        report["merges"] = merge_examples(dedup, facts, limit=examples) if examples else []
        if decisions is not None:
            decisions.extend(stream_decisions(dedup, facts))
    finally:
        for tenant in tenants:
            tenant.delete()
    return report


def stream_decisions(run: StreamRun, facts: list[StreamFact]) -> list[dict[str, Any]]:
    """One row per fact in stream order: its outcome, relation and confidence, and the facts it was
    merged with or superseded, named by their place in the stream (row ids differ between runs), to
    compare two versions of the judge fact by fact."""
    first_fact: dict[int, int] = {}
    rows = []
    for index, (fact, outcome) in enumerate(zip(facts, run.outcomes, strict=True)):
        first_fact.setdefault(outcome.memory_id, index)
        rows.append(
            {
                "fact": index,
                "text": fact.text,
                "outcome": outcome.outcome,
                "kept_by_fact": first_fact[outcome.memory_id],
                "related_facts": sorted(first_fact.get(i, -1) for i in outcome.related_ids),
                "relation": outcome.relation,
                "confidence": None if outcome.confidence is None else round(outcome.confidence, 4),
            }
        )
    return rows


def lossy_merges(run: StreamRun, facts: list[StreamFact]) -> int:
    """How many merges of the run kept a text that drops a word, name or number of one of its
    sources (`judge.merge.lost_facts`): the store path refuses such merges, so this counts 0
    unless a merge slipped past that check."""
    merged = [(f, o) for f, o in zip(facts, run.outcomes, strict=True) if o.outcome == "merged_into"]
    ids = {o.memory_id for _, o in merged} | {i for _, o in merged for i in o.related_ids}
    texts = dict(Memory.objects.filter(tenant=run.tenant, pk__in=ids).values_list("id", "text"))
    return sum(
        any(
            lost_facts(texts.get(o.memory_id, ""), source)
            for source in [f.text, *(texts.get(i, "") for i in o.related_ids)]
        )
        for f, o in merged
    )


def merge_examples(run: StreamRun, facts: list[StreamFact], limit: int = 25) -> list[dict[str, Any]]:
    """The first merges and supersedes of the run, new text beside the text it replaced, for reading."""
    related = {i for o in run.outcomes for i in o.related_ids}
    texts = dict(Memory.objects.filter(tenant=run.tenant, pk__in=related).values_list("id", "text"))
    examples: list[dict[str, Any]] = []
    for fact, outcome in zip(facts, run.outcomes, strict=True):
        if outcome.outcome in ("merged_into", "superseded") and len(examples) < limit:
            examples.append(
                {
                    "outcome": outcome.outcome,
                    "new": fact.text,
                    "old": [texts.get(i, "") for i in outcome.related_ids],
                    "relation": outcome.relation,
                    "confidence": None if outcome.confidence is None else round(outcome.confidence, 3),
                }
            )
    return examples
