"""Relations a person would agree with, through the real write path (the local model and the offline
judge): state changes supersede, numbered items and events stay apart without review, merges lose
no word, an undo lasts, a difference is named and refused in bulk, a judge fallback is reported."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_app.judge.facts import names
from memory_app.judge.signals import text_norm as tn
from memory_app.models import DuplicateCluster, KeptApartPair, Memory, MemoryChange
from memory_app.models.memory import MemoryStatus
from memory_app.models.review import DIFFERS
from memory_app.overrides import StoreOverrides
from memory_app.services.actors import Actor
from memory_app.services.review.clusters import cluster_bulk_merge
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store
from memory_eval.scenarios import load_scenarios, run_scenarios
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def _store(tenant, *texts: str, user_id: str = "u1", **options):  # type: ignore[no-untyped-def]
    return [
        memory_store(
            tenant=tenant,
            items=[MemoryInput(text=text, user_id=user_id)],
            options=StoreOverrides(**options),
        )[0]
        for text in texts
    ]


def _active(tenant, user_id: str = "u1") -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(
        Memory.objects.filter(tenant=tenant, user_id=user_id, status=MemoryStatus.ACTIVE).values_list(
            "text", flat=True
        )
    )


def test_a_move_supersedes_where_the_user_lived_and_context_serves_the_new_city(tenant_a):
    for text in ("I live in Berlin.", "I moved to Munich last month."):
        assert tenant_a.client.post("/api/v1/memories", {"text": text, "user_id": "u1"}, format="json")
    assert _active(tenant_a.tenant) == ["I moved to Munich last month."]
    old = Memory.objects.get(tenant=tenant_a.tenant, text="I live in Berlin.")
    assert old.status == MemoryStatus.SUPERSEDED and old.superseded_by.text == "I moved to Munich last month."
    body = tenant_a.client.post(
        "/api/v1/context", {"query": "where do I live", "user_id": "u1"}, format="json"
    ).json()
    served = json.dumps(body)
    assert "Munich" in served and "Berlin" not in served


def test_a_new_job_supersedes_the_old_one():
    tenant = TenantFactory()
    _, new = _store(tenant, "I work at Google.", "I left Google and now work at Apple.")
    assert new.outcome == "superseded"
    assert _active(tenant) == ["I left Google and now work at Apple."]


def test_another_flight_number_is_another_flight_stored_without_review():
    tenant = TenantFactory()
    outcomes = _store(
        tenant, "Flight LH400 leaves Frankfurt at 10:05.", "Flight LH402 leaves Frankfurt at 13:20."
    )
    assert [o.outcome for o in outcomes] == ["created", "created"]
    assert len(_active(tenant)) == 2
    assert not DuplicateCluster.objects.filter(tenant=tenant).exists()


def test_two_runs_on_two_days_are_two_events_stored_without_review():
    tenant = TenantFactory()
    outcomes = _store(tenant, "I ran 5 km on Monday.", "I ran 10 km on Wednesday.")
    assert [o.outcome for o in outcomes] == ["created", "created"]
    assert not DuplicateCluster.objects.filter(tenant=tenant).exists()


def test_a_merge_never_keeps_a_text_that_drops_a_word_of_the_other():
    tenant = TenantFactory()
    _store(tenant, "The user's favorite color is blue", "The user likes the color blue for clothes")
    assert _active(tenant) == [
        "The user likes the color blue for clothes",
        "The user's favorite color is blue",
    ]


def test_a_lossless_merge_keeps_the_text_that_states_both():
    tenant = TenantFactory()
    _, second = _store(
        tenant, "Priya works as a nurse at St. Mary's Hospital.", "Priya is a nurse at St. Mary's Hospital."
    )
    assert second.outcome == "merged_into"
    assert _active(tenant) == ["Priya works as a nurse at St. Mary's Hospital."]


def test_thirty_numbered_policies_survive_compaction_and_none_is_queued():
    tenant = TenantFactory()
    topics = ["travel", "expenses", "laptops", "parking", "training", "remote work"]
    texts = [
        f"Policy {n}: {topics[n % len(topics)]} over {n * 100} euros needs approval within {n} days."
        for n in range(1, 31)
    ]
    _store(tenant, *texts, deduplicate=False)
    call_command("compact", "--tenant", tenant.slug, "--apply", stdout=io.StringIO())
    assert len(_active(tenant)) == 30
    assert not DuplicateCluster.objects.filter(tenant=tenant).exists()
    assert not MemoryChange.objects.filter(tenant=tenant).exists()


def test_an_undo_through_the_api_keeps_the_pair_apart_for_later_compaction(tenant_a):
    tenant = tenant_a.tenant
    _, merged = _store(tenant, "The user's dog is named Rex.", "The user has a dog called Rex.")
    assert merged.outcome == "merged_into"
    response = tenant_a.client.post(f"/api/v1/merges/{merged.change_id}/undo")
    assert response.status_code == 200
    assert len(_active(tenant)) == 2
    assert KeptApartPair.objects.filter(tenant=tenant).count() == 1
    call_command("compact", "--tenant", tenant.slug, "--apply", stdout=io.StringIO())
    assert len(_active(tenant)) == 2


def test_a_queued_pair_names_its_difference_and_bulk_merge_refuses_it(reviewer):
    tenant = TenantFactory()
    _, second = _store(tenant, "I ❤️ cats", "I 😡 cats")
    assert second.outcome == "queued_for_review"
    cluster = DuplicateCluster.objects.get(tenant=tenant, pk=second.cluster_id)
    assert cluster.verdict == DIFFERS and cluster.confidence is None
    assert "😡" in cluster.reason
    report = cluster_bulk_merge(tenant=tenant, cluster_ids=[cluster.pk], actor=Actor.staff(reviewer))
    assert report.resolved == []
    assert report.skipped[0][0] == cluster.pk and "differ" in report.skipped[0][1]
    assert _active(tenant) == ["I ❤️ cats", "I 😡 cats"]


def test_an_llm_judge_without_an_endpoint_is_reported_in_the_store_warnings(tenant_a, settings):
    settings.LLM_MODEL = ""
    for text in ("User likes green tea", "User likes green tea a lot"):
        response = tenant_a.client.post(
            "/api/v1/memories?judge=llm", {"text": text, "user_id": "u1"}, format="json"
        )
        assert response.status_code in (200, 201)
    warnings = response.json()["warnings"]
    assert any(w.startswith("judge_fallback:") and "offline judge decided" in w for w in warnings)


_FACT_WORDS = st.sampled_from(
    ["Alice", "Bob", "Berlin", "Paris", "tea", "coffee", "runs", "likes", "daily", "on Mondays", "7", "12"]
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_FACT_WORDS, min_size=2, max_size=5), st.lists(_FACT_WORDS, min_size=2, max_size=5))
def test_every_merge_of_the_store_path_keeps_each_number_and_name_of_both_sources(first, second):
    tenant = TenantFactory()
    texts = (" ".join(first), " ".join(second))
    if texts[0] == texts[1]:
        return
    outcomes = _store(tenant, *texts)
    if outcomes[1].outcome != "merged_into":
        return
    kept = Memory.objects.get(pk=outcomes[1].memory_id).text
    for source in texts:
        assert tn.numbers(source) <= tn.numbers(kept)
        assert all(name in kept for name in names(source))


def test_a_merge_unites_both_sources_metadata_and_an_undo_gives_each_its_own(tenant_a):
    tenant = tenant_a.tenant
    first = memory_store(
        tenant=tenant,
        items=[MemoryInput(text="The user's dog is named Rex.", user_id="u1", metadata={"a": 1, "k": "old"})],
    )[0]
    second = memory_store(
        tenant=tenant,
        items=[
            MemoryInput(text="The user has a dog called Rex.", user_id="u1", metadata={"b": 2, "k": "new"})
        ],
    )[0]
    assert second.outcome == "merged_into"
    assert Memory.objects.get(pk=second.memory_id).metadata == {"a": 1, "b": 2, "k": "new"}
    assert tenant_a.client.post(f"/api/v1/merges/{second.change_id}/undo").status_code == 200
    assert Memory.objects.get(pk=first.memory_id).metadata == {"a": 1, "k": "old"}
    restored = Memory.objects.get(
        tenant=tenant, text="The user has a dog called Rex.", status=MemoryStatus.ACTIVE
    )
    assert restored.metadata == {"b": 2, "k": "new"}


_OWN_SCENARIOS = Path(__file__).resolve().parent.parent / "data"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["scenarios_own.jsonl", "scenarios_own_2.jsonl"])
def test_our_own_scenarios_meet_the_relation_targets(name):
    """Sequences written for this project in the families of the dev file, other words and domains:
    the targets the hidden set is held to (keep_all 100 % kept and 90 % without review, collapse
    and update handled 80 % and acted on 50 %)."""
    report = run_scenarios(scenarios=load_scenarios(_OWN_SCENARIOS / name))
    groups = report["groups"]
    assert groups["expect:keep_all"]["handled"] == 1.0
    assert groups["expect:keep_all"]["acted"] >= 0.9
    for expect in ("collapse", "update"):
        assert groups[f"expect:{expect}"]["handled"] >= 0.8
        assert groups[f"expect:{expect}"]["acted"] >= 0.5
