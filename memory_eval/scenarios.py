"""Store-time relations measured on labelled sequences (`manage.py evaluate_dedup --scenarios`).

A scenario is a short sequence of one user's memories and what a careful person expects to stay
active (`keep_all`, `collapse` or `update`). Each scenario's texts are stored in order for a fresh
user through `memory_store`, with the default settings, as `POST /api/v1/memories` stores them; the
user's active memories and the review queue are then read and the expectation checked:

- keep_all: every text still active as written (kept); and nothing queued (kept without review);
- collapse: one active memory, the others merged into it (merged), or the later text queued;
- update: the last text active and every earlier one superseded (superseded), or the last queued.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_app.models import Memory
from memory_app.models.memory import MemoryStatus
from memory_app.overrides import StoreOverrides
from memory_app.services.api_keys import tenant_create
from memory_app.services.store.types import MemoryInput, StoreOutcome
from memory_app.services.store.write import memory_store

EXPECTATIONS = ("keep_all", "collapse", "update")


@dataclass(frozen=True)
class Scenario:
    id: str
    family: str
    expect: str
    texts: tuple[str, ...]


@dataclass(frozen=True)
class ScenarioResult:
    scenario: Scenario
    handled: bool  # the expectation holds, counting a queued later text for collapse and update
    acted: bool  # kept without review (keep_all), merged (collapse), superseded (update)
    outcomes: tuple[str, ...]
    active: tuple[str, ...]
    # Per stored text: (relation, confidence) of the verdict the store path acted on.
    verdicts: tuple[tuple[str | None, float | None], ...] = ()


def load_scenarios(path: Path) -> list[Scenario]:
    scenarios = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row["expect"] not in EXPECTATIONS:
            raise ValueError(f"line {number}: unknown expect {row['expect']!r}")
        texts = tuple(str(text) for text in row["texts"])
        if len(texts) < 2:
            raise ValueError(f"line {number}: a scenario needs at least two texts")
        scenarios.append(Scenario(str(row["id"]), str(row["family"]), row["expect"], texts))
    return scenarios


def judge_outcome(scenario: Scenario, outcomes: list[StoreOutcome], active: list[str]) -> tuple[bool, bool]:
    """(handled, acted) for one scenario from its store outcomes and the texts left active."""
    queued_last = outcomes[-1].outcome == "queued_for_review"
    if scenario.expect == "keep_all":
        kept = sorted(active) == sorted(scenario.texts)
        return kept, kept and not any(o.outcome == "queued_for_review" for o in outcomes)
    if scenario.expect == "collapse":
        merged = len(active) == 1 and all(o.outcome in ("merged_into", "duplicate_of") for o in outcomes[1:])
        return merged or queued_last, merged
    superseded = active == [scenario.texts[-1]]
    return superseded or queued_last, superseded


def evaluate_scenarios(*, scenarios: list[Scenario], judge: str | None = None) -> list[ScenarioResult]:
    """Stores every scenario for its own user in a scratch tenant (deleted afterwards, even on error)."""
    tenant = tenant_create(name="evaluate_dedup scenarios", slug=f"eval-scenarios-{uuid.uuid4().hex[:12]}")
    options = StoreOverrides(judge=judge)
    results = []
    try:
        for scenario in scenarios:
            user_id = f"scenario-{scenario.id}-{uuid.uuid4().hex[:8]}"
            outcomes = []
            for text in scenario.texts:
                item = MemoryInput(text=text, user_id=user_id)
                [outcome] = memory_store(tenant=tenant, items=[item], options=options)
                outcomes.append(outcome)
            active = list(
                Memory.objects.filter(tenant=tenant, user_id=user_id, status=MemoryStatus.ACTIVE)
                .order_by("id")
                .values_list("text", flat=True)
            )
            handled, acted = judge_outcome(scenario, outcomes, active)
            results.append(
                ScenarioResult(
                    scenario,
                    handled,
                    acted,
                    tuple(o.outcome for o in outcomes),
                    tuple(active),
                    tuple((o.relation, o.confidence) for o in outcomes),
                )
            )
    finally:
        tenant.delete()
    return results


def scenario_report(results: list[ScenarioResult], *, seconds: float) -> dict[str, Any]:
    """Per expectation and per family: how many scenarios, the share handled and the share acted on."""
    groups: dict[str, list[ScenarioResult]] = defaultdict(list)
    for result in results:
        groups[f"expect:{result.scenario.expect}"].append(result)
        groups[f"family:{result.scenario.family}"].append(result)
    table = {
        name: {
            "scenarios": len(rows),
            "handled": round(sum(r.handled for r in rows) / len(rows), 4),
            "acted": round(sum(r.acted for r in rows) / len(rows), 4),
        }
        for name, rows in sorted(groups.items())
    }
    return {
        "scenarios": len(results),
        "groups": table,
        "failures": [
            {
                "id": r.scenario.id,
                "family": r.scenario.family,
                "expect": r.scenario.expect,
                "outcomes": list(r.outcomes),
                "active": list(r.active),
            }
            for r in results
            if not (r.handled and r.acted)
        ],
        "ms_per_scenario": round(1000 * seconds / max(1, len(results)), 1),
    }


def scenario_decisions(results: list[ScenarioResult]) -> list[dict[str, Any]]:
    """One row per stored text of each scenario: the text, the outcome and the verdict acted on,
    and the texts left active after the last one, to compare two versions of the judge."""
    return [
        {
            "id": r.scenario.id,
            "step": step,
            "text": text,
            "outcome": outcome,
            "relation": relation,
            "confidence": confidence,
            **({"active": list(r.active)} if step == len(r.scenario.texts) - 1 else {}),
        }
        for r in results
        for step, (text, outcome, (relation, confidence)) in enumerate(
            zip(r.scenario.texts, r.outcomes, r.verdicts, strict=True)
        )
    ]


def run_scenarios(*, scenarios: list[Scenario], judge: str | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    results = evaluate_scenarios(scenarios=scenarios, judge=judge)
    return scenario_report(results, seconds=time.perf_counter() - started)
