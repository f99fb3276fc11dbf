"""Compaction of a scope on the real database: merge, supersede, review, dry runs, idempotency."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from memory_app.db.vectors import half_precision
from memory_app.models import DuplicateCluster, KeptApartPair, Memory, MemoryChange
from memory_app.models.memory import MemoryStatus
from memory_app.selectors.compaction import ScopeKey, compaction_scopes, scope_vectors
from memory_app.services.maintenance.compaction import scope_compact
from tests.factories import MemoryFactory, TenantFactory, unit_vector
from tests.factories.ops import ScriptedJudge, near, put, scripted_tools

pytestmark = pytest.mark.django_db


def _scope(tenant, user_id: str = "u1") -> ScopeKey:  # type: ignore[no-untyped-def]
    return ScopeKey(tenant.pk, user_id, "default", "episodic")


def _active_texts(tenant) -> set[str]:  # type: ignore[no-untyped-def]
    return set(
        Memory.objects.filter(tenant=tenant, status=MemoryStatus.ACTIVE).values_list("text", flat=True)
    )


def test_scope_vectors_read_every_active_row_of_the_scope_exactly() -> None:
    tenant = TenantFactory()
    rows = [MemoryFactory(tenant=tenant, user_id="u1") for _ in range(5)]
    MemoryFactory(tenant=tenant, user_id="u2")
    Memory.objects.filter(pk=rows[0].pk).update(status=MemoryStatus.SUPERSEDED)
    ids, vectors = scope_vectors(tenant=tenant, scope=_scope(tenant))
    assert ids.tolist() == [m.pk for m in rows[1:]]
    for i, m in zip(ids, rows[1:], strict=True):
        # The factory's float32 vector, as the halfvec column keeps it.
        assert np.array_equal(vectors[ids.tolist().index(i)], half_precision(np.asarray(m.embedding)))


def test_scopes_list_only_scopes_with_two_rows_after_the_cursor() -> None:
    tenant = TenantFactory()
    for user in ("a", "a", "b", "c", "c"):
        MemoryFactory(tenant=tenant, user_id=user)
    keys = [s.user_id for s, _ in compaction_scopes(tenant=tenant)]
    assert keys == ["a", "c"]
    assert [s.user_id for s, _ in compaction_scopes(tenant=tenant, after=_scope(tenant, "a"))] == ["c"]


def _planted(tenant):  # type: ignore[no-untyped-def]
    put(tenant, "likes green tea", near(1, 0.05, 1))
    put(tenant, "User likes green tea", near(1, 0.05, 2))
    put(tenant, "BMI goal 23", near(2, 0.05, 1))
    put(tenant, "BMI goal 24", near(2, 0.05, 2))
    put(tenant, "espresso grinder is broken", near(3, 0.05, 1))
    put(tenant, "espresso machine is broken", near(3, 0.05, 2))
    put(tenant, "walks the dog daily", unit_vector(99))
    return ScriptedJudge(
        {
            frozenset(("likes green tea", "User likes green tea")): ("duplicate", 0.95),
            frozenset(("BMI goal 23", "BMI goal 24")): ("update", 0.9),
        }
    )


def test_compaction_merges_duplicates_supersedes_updates_and_keeps_distinct_facts() -> None:
    tenant = TenantFactory()
    judge = _planted(tenant)
    report = scope_compact(tenant=tenant, scope=_scope(tenant), tools=scripted_tools(judge))
    assert (report.groups, report.merged, report.superseded) == (3, 2, 1)
    assert _active_texts(tenant) == {
        "User likes green tea",
        "BMI goal 24",
        "espresso grinder is broken",
        "espresso machine is broken",
        "walks the dog daily",
    }
    old = Memory.objects.get(tenant=tenant, text="BMI goal 23")
    assert old.superseded_by.text == "BMI goal 24"
    assert MemoryChange.objects.filter(tenant=tenant).count() == 2


def test_running_compaction_twice_changes_nothing_more() -> None:
    tenant = TenantFactory()
    judge = _planted(tenant)
    scope_compact(tenant=tenant, scope=_scope(tenant), tools=scripted_tools(judge))
    before = list(Memory.objects.filter(tenant=tenant).order_by("pk").values_list("pk", "status"))
    again = scope_compact(tenant=tenant, scope=_scope(tenant), tools=scripted_tools(judge))
    assert (again.merged, again.superseded, again.queued) == (0, 0, 0)
    assert list(Memory.objects.filter(tenant=tenant).order_by("pk").values_list("pk", "status")) == before


def test_plan_mode_reports_the_merge_and_writes_nothing() -> None:
    tenant = TenantFactory()
    judge = _planted(tenant)
    report = scope_compact(tenant=tenant, scope=_scope(tenant), tools=scripted_tools(judge), mode="plan")
    assert sorted(a.action for a in report.actions) == ["merge", "supersede"]
    assert MemoryChange.objects.filter(tenant=tenant).count() == 0
    assert len(_active_texts(tenant)) == 7


def test_queue_mode_puts_groups_in_the_review_queue_once_and_merges_nothing() -> None:
    tenant = TenantFactory()
    judge = _planted(tenant)
    first = scope_compact(tenant=tenant, scope=_scope(tenant), tools=scripted_tools(judge), mode="queue")
    second = scope_compact(tenant=tenant, scope=_scope(tenant), tools=scripted_tools(judge), mode="queue")
    assert (first.queued, second.queued) == (2, 0)
    clusters = DuplicateCluster.objects.filter(tenant=tenant, origin="compaction")
    assert clusters.count() == 2
    assert MemoryChange.objects.filter(tenant=tenant).count() == 0


def test_unsure_judgements_go_to_review_instead_of_merging() -> None:
    tenant = TenantFactory()
    put(tenant, "runs on mondays", near(5, 0.05, 1))
    put(tenant, "runs every monday", near(5, 0.05, 2))
    judge = ScriptedJudge({frozenset(("runs on mondays", "runs every monday")): ("duplicate", 0.4)})
    report = scope_compact(tenant=tenant, scope=_scope(tenant), tools=scripted_tools(judge))
    assert (report.merged, report.queued) == (0, 1)
    assert DuplicateCluster.objects.get(tenant=tenant).origin == "compaction"


def test_a_duplicate_whose_name_the_kept_text_would_lose_is_queued_not_merged() -> None:
    tenant = TenantFactory()
    put(tenant, "User's sister Ana lives in Porto", near(6, 0.05, 1))
    put(tenant, "User's sister lives in Porto", near(6, 0.05, 2))
    put(tenant, "User's sister lives in Porto, near the river", near(6, 0.05, 3))
    texts = [
        "User's sister Ana lives in Porto",
        "User's sister lives in Porto",
        "User's sister lives in Porto, near the river",
    ]
    judge = ScriptedJudge({frozenset(pair): ("duplicate", 0.99) for pair in combinations(texts, 2)})
    report = scope_compact(tenant=tenant, scope=_scope(tenant), tools=scripted_tools(judge))
    merge = next(a for a in report.actions if a.action == "merge")
    review = next(a for a in report.actions if a.action == "review")
    # The kept text cannot name Ana, so her fact stays active beside it and a person decides.
    assert "Ana" not in merge.text and "Ana" in " ".join(review.texts)
    assert "User's sister Ana lives in Porto" in _active_texts(tenant)
    assert report.merged == 2 and report.queued == 1


def test_pairs_kept_apart_by_a_reviewer_are_never_merged() -> None:
    tenant = TenantFactory()
    a = put(tenant, "likes green tea", near(1, 0.05, 1))
    b = put(tenant, "User likes green tea", near(1, 0.05, 2))
    KeptApartPair.objects.create(tenant=tenant, memory_low_id=min(a.pk, b.pk), memory_high_id=max(a.pk, b.pk))
    judge = ScriptedJudge({frozenset((a.text, b.text)): ("duplicate", 0.99)})
    report = scope_compact(tenant=tenant, scope=_scope(tenant), tools=scripted_tools(judge))
    assert (report.groups, report.merged, judge.calls) == (0, 0, 0)


def test_compaction_of_one_tenant_never_touches_another() -> None:
    tenant, other = TenantFactory(), TenantFactory()
    _planted(tenant)
    judge = _planted(other)
    scope_compact(tenant=tenant, scope=_scope(tenant), tools=scripted_tools(judge))
    assert len(_active_texts(other)) == 7
    with pytest.raises(ValueError):
        scope_vectors(tenant=other, scope=_scope(tenant))
