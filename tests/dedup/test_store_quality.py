"""The write path with the real local model and the real offline judge, and evaluate_dedup itself."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from memory_app.models import Memory, Tenant
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store
from memory_eval.dedup import dedup_metrics, load_pairs
from tests.factories import TenantFactory

_ROWS = [
    ("t1", "User's target BMI is 23", "User's target BMI is 24", "update"),
    ("t2", "User likes their steak medium-rare", "User likes steak medium rare", "duplicate"),
    ("t3", "User's espresso machine is broken", "User's espresso grinder is broken", "distinct"),
    ("t4", "User runs 5 km on Mondays", "User now runs 10 km on Mondays", "update"),
    ("t5", "User is allergic to peanuts", "User is not allergic to peanuts", "update"),
    ("t6", "User has a dog", "User has a dog called Rex, a black labrador", "refine"),
]
PAIRS = [dict(zip(("id", "existing", "new", "label"), row, strict=True)) for row in _ROWS]


def test_rates_follow_their_definitions():
    rows = [
        ("duplicate", "merge", False),
        ("duplicate", "review", False),
        ("duplicate", "store", False),
        ("update", "supersede", False),
        ("update", "merge", False),
        ("distinct", "supersede", False),
        ("distinct", "store", False),
        ("refine", "merge", True),
        ("refine", "merge", False),
    ]
    m = dedup_metrics(rows)
    assert m["pairs"] == 9
    assert m["false_merge_rate"] == pytest.approx(1 / 4, abs=1e-3)
    assert m["wrong_supersede_rate"] == pytest.approx(1 / 2, abs=1e-3)
    assert m["duplicate_merge_rate"] == pytest.approx(1 / 3, abs=1e-3)
    assert m["duplicate_handled_rate"] == pytest.approx(2 / 3, abs=1e-3)
    assert m["refine_ok_rate"] == pytest.approx(1 / 2, abs=1e-3)
    assert m["review_rate"] == pytest.approx(1 / 9, abs=1e-3)
    assert m["confusion"]["update"] == {"merge": 1, "supersede": 1, "store": 0, "review": 0}


@pytest.mark.django_db
def test_a_changed_value_is_never_merged_by_the_real_offline_judge():
    tenant = TenantFactory()
    [old] = memory_store(tenant=tenant, items=[MemoryInput(text="User's target BMI is 23", user_id="u1")])
    [new] = memory_store(tenant=tenant, items=[MemoryInput(text="User's target BMI is 24", user_id="u1")])
    assert new.outcome in {"superseded", "queued_for_review"}
    assert Memory.objects.get(pk=old.memory_id).text == "User's target BMI is 23"
    assert Memory.objects.get(pk=new.memory_id).text == "User's target BMI is 24"


@pytest.mark.django_db
def test_evaluate_dedup_prints_the_rates_as_json_and_removes_its_scratch_tenant(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in PAIRS) + "\n")
    tenants_before = Tenant.objects.count()
    out = io.StringIO()
    call_command("evaluate_dedup", "--pairs", str(path), "--json", stdout=out)
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    assert report["pairs"] == 6 and report["judge"] == "offline"
    for key in ("false_merge_rate", "wrong_supersede_rate", "duplicate_merge_rate", "duplicate_handled_rate"):
        assert key in report and key in report["baseline"]
    assert sum(sum(row.values()) for row in report["confusion"].values()) == 6
    assert report["false_merge_rate"] == 0.0
    assert report["baseline"]["false_merge_rate"] > 0.0  # the cosine rule merges the BMI update
    assert Tenant.objects.count() == tenants_before
    assert not Memory.objects.filter(namespace="evaluate_dedup").exists()


@pytest.mark.django_db
def test_no_update_or_distinct_pair_of_a_sample_of_the_dev_set_is_merged():
    data = Path(settings.BASE_DIR).parent / "shared" / "data" / "memory_pairs_dev.jsonl"
    if not data.exists():
        pytest.skip(f"{data} is absent (shared evaluation data)")
    pairs = [p for p in load_pairs(data) if p.label in ("update", "distinct")][::6]
    out = io.StringIO()
    sample = Path(settings.BASE_DIR) / "var" / "test_dedup_sample.jsonl"
    sample.parent.mkdir(exist_ok=True)
    sample.write_text(
        "\n".join(
            json.dumps({"id": p.id, "existing": p.existing, "new": p.new, "label": p.label}) for p in pairs
        )
    )
    try:
        call_command("evaluate_dedup", "--pairs", str(sample), "--json", stdout=out)
    finally:
        sample.unlink()
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    assert report["pairs"] == len(pairs) >= 20
    assert report["false_merge_rate"] == 0.0


_SCENARIOS = [
    {
        "id": "t-ids",
        "family": "numbered_ids",
        "expect": "keep_all",
        "texts": ["Bus 42 goes to the airport.", "Bus 45 goes to the stadium."],
    },
    {
        "id": "t-para",
        "family": "paraphrase",
        "expect": "collapse",
        "texts": ["Lena is a pilot at Lufthansa.", "Lena works as a pilot at Lufthansa."],
    },
    {
        "id": "t-move",
        "family": "state_change",
        "expect": "update",
        "texts": ["Kofi lives in Accra.", "Kofi relocated to Lagos in spring."],
    },
]


@pytest.mark.django_db
def test_evaluate_dedup_scenarios_reports_each_expectation_and_removes_its_scratch_tenant(tmp_path):
    path = tmp_path / "scenarios.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in _SCENARIOS) + "\n")
    tenants_before = Tenant.objects.count()
    out = io.StringIO()
    call_command("evaluate_dedup", "--scenarios", str(path), "--json", stdout=out)
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    assert report["scenarios"] == 3
    assert report["groups"]["expect:keep_all"] == {"scenarios": 1, "handled": 1.0, "acted": 1.0}
    assert report["groups"]["expect:collapse"]["acted"] == 1.0
    assert report["groups"]["expect:update"]["acted"] == 1.0
    assert report["failures"] == []
    assert Tenant.objects.count() == tenants_before


@pytest.mark.django_db
def test_evaluate_dedup_writes_one_decision_line_per_pair_and_per_stored_scenario_text(tmp_path):
    pairs, scenarios = tmp_path / "pairs.jsonl", tmp_path / "scenarios.jsonl"
    pairs.write_text("\n".join(json.dumps(p) for p in PAIRS) + "\n")
    scenarios.write_text("\n".join(json.dumps(s) for s in _SCENARIOS) + "\n")
    call_command("evaluate_dedup", "--pairs", str(pairs), "--decisions", str(tmp_path / "p.jsonl"))
    call_command("evaluate_dedup", "--scenarios", str(scenarios), "--decisions", str(tmp_path / "s.jsonl"))
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == [str(p["id"]) for p in PAIRS]
    assert {"existing", "new", "label", "decision", "outcome", "relation", "confidence"} <= rows[0].keys()
    steps = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert len(steps) == sum(len(s["texts"]) for s in _SCENARIOS)
    assert sum("active" in step for step in steps) == len(_SCENARIOS)


def test_a_scenario_file_with_an_unknown_expectation_is_refused(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "x", "family": "f", "expect": "merge_all", "texts": ["a", "b"]}) + "\n")
    with pytest.raises(CommandError, match="unknown expect"):
        call_command("evaluate_dedup", "--scenarios", str(path))
