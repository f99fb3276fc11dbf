"""End-to-end evaluation of store-time dedup on labeled pairs (`manage.py evaluate_dedup`).

Every pair goes through `memory_store` exactly as production writes do: `existing` is stored, then
`new`, in a scope of its own inside a scratch tenant that is removed afterwards. The outcome of `new`
is the decision counted against the label. A cosine-threshold baseline (merge when distance < 0.35,
the seed documents' rule) is computed on the same vectors for comparison.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memory_app.embeddings import embed_texts
from memory_app.models import Memory
from memory_app.overrides import StoreOverrides
from memory_app.services.api_keys import tenant_create
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store

LABELS = ("duplicate", "update", "distinct", "refine")
DECISIONS = ("merge", "supersede", "store", "review")
DECISION_OF = {
    "merged_into": "merge",
    "duplicate_of": "merge",
    "superseded": "supersede",
    "created": "store",
    "queued_for_review": "review",
}
BASELINE_THRESHOLD = 0.35


@dataclass(frozen=True)
class Pair:
    id: str
    existing: str
    new: str
    label: str


@dataclass(frozen=True)
class PairResult:
    pair: Pair
    decision: str
    distance: float
    kept_richer: bool  # a merge's surviving text is not the poorer `existing` (refine pairs)
    outcome: str = ""
    relation: str | None = None
    confidence: float | None = None
    kept_text: str | None = None  # the text a merge kept


def load_pairs(path: Path) -> list[Pair]:
    pairs = []
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if row["label"] not in LABELS:
                raise ValueError(f"pair {row.get('id')}: unknown label {row['label']!r}")
            pairs.append(Pair(str(row["id"]), row["existing"], row["new"], row["label"]))
    return pairs


def _rate(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def dedup_metrics(results: list[tuple[str, str, bool]]) -> dict[str, Any]:
    """(label, decision, kept_richer) rows → the issue's rates and a confusion table label → decision."""
    confusion = {label: dict.fromkeys(DECISIONS, 0) for label in LABELS}
    for label, decision, _ in results:
        confusion[label][decision] += 1
    per_label = Counter(label for label, _, _ in results)
    not_same = per_label["update"] + per_label["distinct"]
    dup = confusion["duplicate"]
    refine_ok = sum(
        1
        for label, decision, richer in results
        if label == "refine" and (decision in ("store", "review") or (decision == "merge" and richer))
    )
    return {
        "pairs": len(results),
        "false_merge_rate": _rate(confusion["update"]["merge"] + confusion["distinct"]["merge"], not_same),
        "wrong_supersede_rate": _rate(confusion["distinct"]["supersede"], per_label["distinct"]),
        "duplicate_merge_rate": _rate(dup["merge"], per_label["duplicate"]),
        "duplicate_handled_rate": _rate(dup["merge"] + dup["review"], per_label["duplicate"]),
        "update_supersede_rate": _rate(confusion["update"]["supersede"], per_label["update"]),
        "refine_ok_rate": _rate(refine_ok, per_label["refine"]),
        "review_rate": _rate(sum(row["review"] for row in confusion.values()), len(results)),
        "confusion": confusion,
    }


def baseline_metrics(results: list[PairResult], threshold: float = BASELINE_THRESHOLD) -> dict[str, Any]:
    """The seed rule on the same vectors: merge (into the longer text) when distance < threshold."""
    rows = []
    for r in results:
        merged = r.distance < threshold
        richer = len(r.pair.new) >= len(r.pair.existing)
        rows.append((r.pair.label, "merge" if merged else "store", richer))
    return {"threshold": threshold, **dedup_metrics(rows)}


def evaluate_pairs(*, pairs: list[Pair], judge: str | None = None) -> tuple[list[PairResult], float]:
    """Runs every pair through memory_store in a scratch tenant (deleted afterwards, even on error)."""
    vectors = embed_texts([p.existing for p in pairs] + [p.new for p in pairs], tenant=None)
    existing_vecs, new_vecs = vectors[: len(pairs)], vectors[len(pairs) :]
    tenant = tenant_create(name="evaluate_dedup scratch", slug=f"eval-dedup-{uuid.uuid4().hex[:12]}")
    options = StoreOverrides(judge=judge)
    results = []
    started = time.perf_counter()
    try:
        for pair, ev, nv in zip(pairs, existing_vecs, new_vecs, strict=True):
            user_id, namespace = f"pair-{pair.id}", "evaluate_dedup"
            existing = MemoryInput(text=pair.existing, embedding=ev, user_id=user_id, namespace=namespace)
            memory_store(tenant=tenant, items=[existing], options=options)
            new = MemoryInput(text=pair.new, embedding=nv, user_id=user_id, namespace=namespace)
            [outcome] = memory_store(tenant=tenant, items=[new], options=options)
            decision = DECISION_OF[outcome.outcome]
            kept_richer, text = False, None
            if decision == "merge":
                text = Memory.objects.filter(pk=outcome.memory_id).values_list("text", flat=True).get()
                kept_richer = text.strip() != pair.existing.strip()
            distance = float(1.0 - np.dot(ev, nv))
            results.append(
                PairResult(
                    pair,
                    decision,
                    distance,
                    kept_richer,
                    outcome=outcome.outcome,
                    relation=outcome.relation,
                    confidence=outcome.confidence,
                    kept_text=text,
                )
            )
    finally:
        tenant.delete()
    return results, time.perf_counter() - started


def pair_decisions(results: list[PairResult]) -> list[dict[str, Any]]:
    """One row per pair: its input and what the store path decided, to compare two versions of the
    judge pair by pair."""
    return [
        {
            "id": r.pair.id,
            "existing": r.pair.existing,
            "new": r.pair.new,
            "label": r.pair.label,
            "decision": r.decision,
            "outcome": r.outcome,
            "relation": r.relation,
            "confidence": r.confidence,
            "kept_text": r.kept_text,
        }
        for r in results
    ]


def evaluation_report(results: list[PairResult], *, judge: str, seconds: float) -> dict[str, Any]:
    rows = [(r.pair.label, r.decision, r.kept_richer) for r in results]
    return {
        "judge": judge,
        **dedup_metrics(rows),
        "ms_per_pair": round(1000 * seconds / max(1, len(results)), 2),
        "baseline": baseline_metrics(results),
    }
