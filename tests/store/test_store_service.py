"""memory_store: the hash tier, candidates, each action, batches, overrides and degraded dependencies."""

from __future__ import annotations

import logging

import pytest

from memory_app.errors import ApplicationError
from memory_app.models import AgentProfile, DuplicateCluster, Memory, MemoryChange
from memory_app.overrides import StoreOverrides
from memory_app.services.lineage.changes import memory_change_undo, memory_snapshot
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store
from tests.factories import MemoryFactory, TenantFactory, unit_vector
from tests.factories.store import FixedJudge, at_distance

pytestmark = pytest.mark.django_db

NEAR = StoreOverrides(candidate_radius=0.5)


def _item(text: str, vector, **kw) -> MemoryInput:  # type: ignore[no-untyped-def]
    return MemoryInput(text=text, user_id=kw.pop("user_id", "u1"), embedding=vector, **kw)


def test_an_identical_text_returns_the_stored_memory_and_counts_an_access():
    tenant = TenantFactory()
    base = unit_vector(1)
    [first] = memory_store(tenant=tenant, items=[_item("User likes tea", base, topics=("drinks",))])
    [again] = memory_store(tenant=tenant, items=[_item("  user LIKES tea! ", base, topics=("food",))])
    assert (first.outcome, again.outcome) == ("created", "duplicate_of")
    assert again.memory_id == first.memory_id
    row = Memory.objects.get(pk=first.memory_id)
    assert row.access_count == 1 and row.last_accessed_at is not None
    assert row.topics == ["drinks", "food"]
    assert Memory.objects.filter(tenant=tenant).count() == 1


def test_a_memory_with_no_neighbour_in_the_radius_is_created_without_asking_the_judge():
    tenant = TenantFactory()
    judge = FixedJudge("duplicate", 0.999)
    base = unit_vector(2)
    memory_store(tenant=tenant, items=[_item("User owns a bike", base)], judge=judge)
    [out] = memory_store(
        tenant=tenant, items=[_item("User is vegan", at_distance(base, 0.8, 3))], options=NEAR, judge=judge
    )
    assert out.outcome == "created"
    assert judge.calls == 0


def test_a_confident_duplicate_is_merged_and_the_undo_restores_the_old_row_byte_for_byte():
    tenant = TenantFactory()
    base = unit_vector(4)
    [old] = memory_store(tenant=tenant, items=[_item("User's dog is Rex", base)])
    before = memory_snapshot(Memory.objects.get(pk=old.memory_id))
    [out] = memory_store(
        tenant=tenant,
        items=[_item("The user's dog is called Rex", at_distance(base, 0.1, 5))],
        options=NEAR,
        judge=FixedJudge("duplicate", 0.999),
    )
    assert out.outcome == "merged_into" and out.relation == "duplicate"
    assert out.related_ids == (old.memory_id,)
    result = Memory.objects.get(pk=out.memory_id)
    assert result.status == "active" and result.text == "The user's dog is called Rex"
    sources = Memory.objects.filter(superseded_by=result)
    assert sources.count() == 2 and set(sources.values_list("status", flat=True)) == {"superseded"}
    [incoming] = sources.exclude(pk=old.memory_id)
    assert incoming.text == "The user's dog is called Rex" and incoming.embedding is not None
    memory_change_undo(tenant=tenant, change_id=out.change_id)
    assert memory_snapshot(Memory.objects.get(pk=old.memory_id)) == before
    assert Memory.objects.get(pk=out.memory_id).status == "deleted"
    incoming.refresh_from_db()
    assert (incoming.status, incoming.superseded_by_id) == ("active", None)


def test_an_update_supersedes_the_old_value_which_stays_in_history():
    tenant = TenantFactory()
    base = unit_vector(6)
    [old] = memory_store(tenant=tenant, items=[_item("User's target BMI is 23", base)])
    [out] = memory_store(
        tenant=tenant,
        items=[_item("User's target BMI is 24", at_distance(base, 0.06, 7))],
        options=NEAR,
        judge=FixedJudge("update", 0.999),
    )
    assert out.outcome == "superseded" and out.related_ids == (old.memory_id,)
    old_row = Memory.objects.get(pk=old.memory_id)
    assert (old_row.status, old_row.superseded_by_id) == ("superseded", out.memory_id)
    assert MemoryChange.objects.get(pk=out.change_id).operation == "supersede"


def test_an_unsure_judgement_stores_the_memory_and_queues_the_pair_for_review():
    tenant = TenantFactory()
    base = unit_vector(8)
    [old] = memory_store(tenant=tenant, items=[_item("Espresso machine is broken", base)])
    [out] = memory_store(
        tenant=tenant,
        items=[_item("Espresso grinder is broken", at_distance(base, 0.1, 9))],
        options=NEAR,
        judge=FixedJudge("duplicate", 0.2),
    )
    assert out.outcome == "queued_for_review"
    cluster = DuplicateCluster.objects.get(pk=out.cluster_id)
    assert cluster.status == "pending"
    assert set(cluster.members.values_list("memory_id", flat=True)) == {old.memory_id, out.memory_id}
    assert Memory.objects.filter(tenant=tenant, status="active").count() == 2


def test_a_distinct_fact_is_stored_beside_its_neighbour():
    tenant = TenantFactory()
    base = unit_vector(10)
    memory_store(tenant=tenant, items=[_item("User's favourite cuisine is Thai", base)])
    [out] = memory_store(
        tenant=tenant,
        items=[_item("User's partner's favourite cuisine is Thai", at_distance(base, 0.1, 11))],
        options=NEAR,
        judge=FixedJudge("distinct", 0.95),
    )
    assert out.outcome == "created"
    assert Memory.objects.filter(tenant=tenant, status="active").count() == 2


def test_deduplicate_false_skips_the_judge_but_never_duplicates_an_identical_text():
    tenant = TenantFactory()
    judge = FixedJudge("duplicate", 0.999)
    base = unit_vector(12)
    memory_store(tenant=tenant, items=[_item("User runs daily", base)])
    off = StoreOverrides(deduplicate=False, candidate_radius=0.5)
    [near] = memory_store(
        tenant=tenant,
        items=[_item("User jogs every day", at_distance(base, 0.05, 13))],
        options=off,
        judge=judge,
    )
    [same] = memory_store(tenant=tenant, items=[_item("User runs daily", base)], options=off, judge=judge)
    assert (near.outcome, same.outcome, judge.calls) == ("created", "duplicate_of", 0)


def test_an_agent_profile_sets_the_radius_and_a_request_overrides_it():
    tenant = TenantFactory()
    AgentProfile.objects.create(tenant=tenant, agent_id="coach", config={"candidate_radius": 0.0})
    judge = FixedJudge("duplicate", 0.999)
    base = unit_vector(14)
    memory_store(tenant=tenant, items=[_item("User sleeps 7 hours", base, agent_id="coach")])
    near = at_distance(base, 0.1, 15)
    [by_profile] = memory_store(
        tenant=tenant, items=[_item("User sleeps seven hours", near, agent_id="coach")], judge=judge
    )
    assert by_profile.outcome == "created" and judge.calls == 0
    [by_request] = memory_store(
        tenant=tenant,
        items=[_item("User gets 7 hours of sleep", at_distance(base, 0.12, 16), agent_id="coach")],
        options=NEAR,
        judge=judge,
    )
    assert by_request.outcome == "merged_into" and judge.calls == 1


def test_a_malformed_profile_value_is_ignored_with_a_warning(caplog):
    tenant = TenantFactory()
    AgentProfile.objects.create(tenant=tenant, agent_id="bot", config={"candidate_radius": "wide"})
    with caplog.at_level(logging.WARNING, logger="memory_app"):
        [out] = memory_store(
            tenant=tenant, items=[_item("User is left-handed", unit_vector(17), agent_id="bot")]
        )
    assert out.outcome == "created"
    assert "candidate_radius" in caplog.text


def test_items_of_one_batch_dedup_against_each_other_with_one_embedding_call(monkeypatch):
    import memory_app.services.store.write as store

    calls: list[int] = []
    real = store.embed_texts_begin

    def counting(texts, *, tenant):  # type: ignore[no-untyped-def]
        calls.append(len(texts))
        return real(texts, tenant=tenant)

    monkeypatch.setattr(store, "embed_texts_begin", counting)
    tenant = TenantFactory()
    texts = ["User has a cat named Tom", "User is allergic to peanuts", "user has a cat named tom."]
    outcomes = memory_store(tenant=tenant, items=[MemoryInput(text=t, user_id="u1") for t in texts])
    assert calls == [3]
    assert [o.outcome for o in outcomes][2] == "duplicate_of"
    assert outcomes[2].memory_id == outcomes[0].memory_id


def test_one_bad_item_rejects_the_whole_batch_and_names_it():
    tenant = TenantFactory()
    items = [
        MemoryInput(text="fine", user_id="u1"),
        MemoryInput(text="   ", user_id="u1"),
        MemoryInput(text="x", kind="dream"),
    ]
    with pytest.raises(ApplicationError) as err:
        memory_store(tenant=tenant, items=items)
    assert set(err.value.fields) == {"items[1].text", "items[2].kind"}
    assert Memory.objects.filter(tenant=tenant).count() == 0


def test_an_episodic_memory_without_a_user_is_refused_and_a_semantic_one_is_not():
    tenant = TenantFactory()
    with pytest.raises(ApplicationError) as err:
        memory_store(tenant=tenant, items=[MemoryInput(text="User likes tea", user_id="  ")])
    assert set(err.value.fields) == {"items[0].user_id"}
    [out] = memory_store(tenant=tenant, items=[MemoryInput(text="Tea is a drink", kind="semantic")])
    assert out.outcome == "created"
    assert list(Memory.objects.filter(tenant=tenant).values_list("text", flat=True)) == ["Tea is a drink"]


def test_a_failing_embedding_provider_still_stores_the_memory(monkeypatch, caplog):
    import memory_app.services.store.write as store

    def broken(texts, *, tenant):  # type: ignore[no-untyped-def]
        raise ConnectionError("provider down")

    monkeypatch.setattr(store, "embed_texts_begin", broken)
    tenant = TenantFactory()
    with caplog.at_level(logging.WARNING, logger="memory_app"):
        [out] = memory_store(tenant=tenant, items=[MemoryInput(text="User likes jazz", user_id="u1")])
    assert out.outcome == "created" and out.embedding_pending
    assert Memory.objects.get(pk=out.memory_id).embedding is None
    assert "embedding failed" in caplog.text


def test_a_failing_judge_degrades_to_a_plain_store(caplog):
    class Broken:
        name = "broken"

        def judge(self, new, candidates):  # type: ignore[no-untyped-def]
            raise RuntimeError("bug")

    tenant = TenantFactory()
    base = unit_vector(18)
    memory_store(tenant=tenant, items=[_item("User likes hiking", base)])
    with caplog.at_level(logging.WARNING, logger="memory_app"):
        [out] = memory_store(
            tenant=tenant,
            items=[_item("User enjoys hikes", at_distance(base, 0.1, 19))],
            options=NEAR,
            judge=Broken(),
        )
    assert out.outcome == "created"
    assert "judge" in caplog.text


def test_a_merge_joins_the_new_memory_and_only_the_one_candidate_it_duplicates():
    tenant = TenantFactory()
    base = unit_vector(20)
    rows = [
        MemoryFactory(
            tenant=tenant,
            user_id="u1",
            text=text,
            embedding=at_distance(base, 0.05 + 0.01 * i, 21 + i),
        )
        for i, text in enumerate(
            ["User's car is red", "User washes the car weekly", "User's car is a hatchback"]
        )
    ]
    [out] = memory_store(
        tenant=tenant,
        items=[_item("User drives a red car", base)],
        options=NEAR,
        judge=FixedJudge("duplicate", 0.999),
    )
    assert out.outcome == "merged_into"
    assert out.related_ids == (rows[0].pk,)  # the nearest; the others are compaction's to resolve
    assert Memory.objects.filter(pk__in=[rows[1].pk, rows[2].pk], status="active").count() == 2
    sources = MemoryChange.objects.get(pk=out.change_id).sources.values_list("memory__text", flat=True)
    assert set(sources) == {"User's car is red", "User drives a red car"}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User's dog is called Rex", "User's dog is called Bo"),
        ("User runs 5 km on Mondays", "User runs 10 km on Mondays"),
    ],
)
def test_a_merge_that_would_lose_a_name_or_a_number_queues_the_pair_instead(old, new):
    tenant = TenantFactory()
    base = unit_vector(22)
    existing = MemoryFactory(tenant=tenant, user_id="u1", text=old, embedding=at_distance(base, 0.05, 23))
    [out] = memory_store(
        tenant=tenant, items=[_item(new, base)], options=NEAR, judge=FixedJudge("duplicate", 0.999)
    )
    assert out.outcome == "queued_for_review"
    assert out.related_ids == (existing.pk,)
    assert set(Memory.objects.filter(tenant=tenant, status="active").values_list("text", flat=True)) == {
        old,
        new,
    }
    cluster = DuplicateCluster.objects.get(pk=out.cluster_id)
    # The hard difference is the reason shown, not the judge's duplicate confidence.
    assert cluster.reason in ("differs in names: Rex / Bo", "differs in numbers: 5 / 10")
    assert cluster.verdict == "differs" and cluster.confidence is None


def test_a_judge_merged_text_that_drops_a_fact_is_not_kept():
    tenant = TenantFactory()
    base = unit_vector(24)
    MemoryFactory(
        tenant=tenant,
        user_id="u1",
        text="User's sister Ana lives in Porto",
        embedding=at_distance(base, 0.05, 25),
    )
    judge = FixedJudge("duplicate", 0.999, merged_text="User's sister lives in Portugal")
    [out] = memory_store(
        tenant=tenant,
        items=[_item("User's sister Ana lives in Porto, Portugal", base)],
        options=NEAR,
        judge=judge,
    )
    assert out.outcome == "merged_into"
    assert Memory.objects.get(pk=out.memory_id).text == "User's sister Ana lives in Porto, Portugal"


def test_scopes_are_separate_even_for_identical_text():
    tenant = TenantFactory()
    base = unit_vector(30)
    outcomes = memory_store(
        tenant=tenant,
        items=[
            _item("User likes tea", base, user_id="alice"),
            _item("User likes tea", base, user_id="bob"),
            _item("User likes tea", base, user_id="alice", kind="semantic"),
        ],
    )
    assert [o.outcome for o in outcomes] == ["created", "created", "created"]
