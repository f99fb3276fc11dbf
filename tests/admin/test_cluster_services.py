from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from memory_app.errors import ApplicationError
from memory_app.models import DuplicateCluster, KeptApartPair, Memory, MemoryChange
from memory_app.services.actors import Actor
from memory_app.services.lineage.changes import memory_merge
from memory_app.services.review.clusters import (
    change_undo,
    cluster_bulk_keep_apart,
    cluster_bulk_merge,
    cluster_keep_apart,
    cluster_mark_update,
    cluster_merge,
    cluster_split,
    cluster_undo,
)
from memory_app.services.review.queue import review_cluster_create
from tests.factories import TenantFactory
from tests.factories.review import plant_cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff():  # type: ignore[no-untyped-def]
    return get_user_model().objects.create_user("reviewer", password="pw", is_staff=True)


def _statuses(memories: list[Memory]) -> list[str]:
    return [Memory.objects.get(pk=m.pk).status for m in memories]


def test_merge_resolves_the_cluster_with_the_chosen_text_and_records_the_reviewer(staff):
    tenant = TenantFactory()
    cluster, (a, b) = plant_cluster(tenant=tenant, texts=["User likes tea", "User likes green tea"])
    cluster_merge(tenant=tenant, cluster_id=cluster.pk, actor=Actor.staff(staff), text="User likes tea")
    cluster.refresh_from_db()
    assert (cluster.status, cluster.resolved_by, cluster.resolved_at is not None) == ("merged", staff, True)
    change = cluster.changes.get()
    assert (change.actor_type, change.actor_user, change.result.text) == ("user", staff, "User likes tea")
    assert _statuses([a, b]) == ["superseded", "superseded"]


def test_a_resolved_cluster_cannot_be_resolved_again_until_undone(staff):
    tenant = TenantFactory()
    cluster, _ = plant_cluster(tenant=tenant, texts=["A cat named Tom", "A cat called Tom"])
    cluster_keep_apart(tenant=tenant, cluster_id=cluster.pk, actor=Actor.staff(staff))
    with pytest.raises(ApplicationError, match="already resolved"):
        cluster_merge(tenant=tenant, cluster_id=cluster.pk, actor=Actor.staff(staff))


def test_keep_apart_records_every_pair_so_they_are_never_queued_again(staff):
    tenant = TenantFactory()
    cluster, members = plant_cluster(
        tenant=tenant, texts=["grinder broken", "machine broken", "kettle broken"]
    )
    cluster_keep_apart(tenant=tenant, cluster_id=cluster.pk, actor=Actor.staff(staff))
    assert KeptApartPair.objects.filter(tenant=tenant, created_by=staff).count() == 3
    assert review_cluster_create(tenant=tenant, memory_ids=[m.pk for m in members]) is None
    assert _statuses(members) == ["active"] * 3


def test_split_merges_each_group_and_keeps_the_groups_apart(staff):
    tenant = TenantFactory()
    cluster, (a, b, c, d) = plant_cluster(
        tenant=tenant, texts=["dog is Rex", "dog named Rex", "cat is Tom", "cat named Tom"]
    )
    cluster_split(
        tenant=tenant, cluster_id=cluster.pk, groups=[[a.pk, b.pk], [c.pk, d.pk]], actor=Actor.staff(staff)
    )
    cluster.refresh_from_db()
    assert cluster.status == "split"
    assert cluster.changes.count() == 2
    assert KeptApartPair.objects.filter(tenant=tenant).count() == 4
    assert _statuses([a, b, c, d]) == ["superseded"] * 4


def test_split_into_one_group_is_refused(staff):
    tenant = TenantFactory()
    cluster, (a, b) = plant_cluster(tenant=tenant, texts=["x one", "x two"])
    with pytest.raises(ApplicationError, match="at least two groups"):
        cluster_split(tenant=tenant, cluster_id=cluster.pk, groups=[[a.pk, b.pk]], actor=Actor.staff(staff))


def test_mark_as_update_lets_the_newest_supersede_the_older_ones(staff):
    tenant = TenantFactory()
    cluster, (old, mid, new) = plant_cluster(
        tenant=tenant, texts=["BMI goal 23", "BMI goal 24", "BMI goal 25"], verdict="update"
    )
    cluster_mark_update(tenant=tenant, cluster_id=cluster.pk, actor=Actor.staff(staff))
    for m in (old, mid):
        m.refresh_from_db()
        assert (m.status, m.superseded_by_id) == ("superseded", new.pk)
    assert Memory.objects.get(pk=new.pk).status == "active"
    assert cluster.changes.count() == 2


def test_undo_restores_the_members_and_reopens_the_cluster(staff):
    tenant = TenantFactory()
    cluster, members = plant_cluster(tenant=tenant, texts=["BMI goal 23", "BMI goal 24"], verdict="update")
    cluster_mark_update(tenant=tenant, cluster_id=cluster.pk, actor=Actor.staff(staff))
    cluster_undo(tenant=tenant, cluster_id=cluster.pk, actor=Actor.staff(staff))
    cluster.refresh_from_db()
    assert (cluster.status, cluster.resolved_by, cluster.resolved_at) == ("pending", None, None)
    assert _statuses(members) == ["active", "active"]
    assert all(c.undone_by == staff for c in cluster.changes.all())


def test_undo_of_keep_apart_forgets_only_the_pairs_it_recorded(staff):
    tenant = TenantFactory()
    cluster, (a, b, _c) = plant_cluster(tenant=tenant, texts=["p one", "p two", "p three"])
    lo, hi = sorted([a.pk, b.pk])
    KeptApartPair.objects.create(tenant=tenant, memory_low_id=lo, memory_high_id=hi)
    cluster_keep_apart(tenant=tenant, cluster_id=cluster.pk, actor=Actor.staff(staff))
    cluster_undo(tenant=tenant, cluster_id=cluster.pk, actor=Actor.staff(staff))
    assert list(KeptApartPair.objects.values_list("memory_low_id", "memory_high_id")) == [(lo, hi)]


def test_bulk_merge_merges_pending_clusters_and_skips_resolved_ones(staff):
    tenant = TenantFactory()
    first, _ = plant_cluster(tenant=tenant, texts=["likes tea", "likes tea a lot"], confidence=0.95)
    second, _ = plant_cluster(tenant=tenant, texts=["runs daily", "runs every day"], confidence=0.93)
    cluster_keep_apart(tenant=tenant, cluster_id=second.pk, actor=Actor.staff(staff))
    report = cluster_bulk_merge(tenant=tenant, cluster_ids=[first.pk, second.pk], actor=Actor.staff(staff))
    assert [c.pk for c in report.resolved] == [first.pk]
    assert report.skipped[0][0] == second.pk and "already resolved" in report.skipped[0][1]
    assert MemoryChange.objects.filter(tenant=tenant, actor_user=staff).count() == 1


def test_bulk_keep_apart_records_every_pair_and_skips_resolved_clusters(staff):
    tenant = TenantFactory()
    first, (a, b, c) = plant_cluster(tenant=tenant, texts=["likes tea", "likes cats", "likes rain"])
    second, _ = plant_cluster(tenant=tenant, texts=["runs daily", "runs every day"])
    cluster_merge(tenant=tenant, cluster_id=second.pk, actor=Actor.staff(staff))
    report = cluster_bulk_keep_apart(
        tenant=tenant, cluster_ids=[first.pk, second.pk], actor=Actor.staff(staff)
    )
    assert [cl.pk for cl in report.resolved] == [first.pk]
    assert report.skipped[0][0] == second.pk and "already resolved" in report.skipped[0][1]
    assert DuplicateCluster.objects.get(pk=first.pk).status == "kept_apart"
    assert KeptApartPair.objects.filter(tenant=tenant).count() == 3
    assert set(Memory.objects.filter(pk__in=[a.pk, b.pk, c.pk]).values_list("status", flat=True)) == {
        "active"
    }


def test_bulk_keep_apart_in_another_tenant_skips_my_clusters_as_not_found(staff):
    mine, theirs = TenantFactory(), TenantFactory()
    cluster, _ = plant_cluster(tenant=mine, texts=["m one", "m two"])
    report = cluster_bulk_keep_apart(tenant=theirs, cluster_ids=[cluster.pk], actor=Actor.staff(staff))
    assert report.resolved == [] and "not found" in report.skipped[0][1]
    assert DuplicateCluster.objects.get(pk=cluster.pk).status == "pending"
    assert not KeptApartPair.objects.exists()


def test_another_tenant_cannot_resolve_my_cluster(staff):
    mine, theirs = TenantFactory(), TenantFactory()
    cluster, _ = plant_cluster(tenant=mine, texts=["m one", "m two"])
    with pytest.raises(ApplicationError, match="not found"):
        cluster_merge(tenant=theirs, cluster_id=cluster.pk, actor=Actor.staff(staff))
    with pytest.raises(ApplicationError, match="not found"):
        cluster_keep_apart(tenant=theirs, cluster_id=cluster.pk, actor=Actor.staff(staff))


def test_undoing_one_change_of_a_decision_reopens_its_cluster(staff):
    tenant = TenantFactory()
    cluster, (a, b, c, d) = plant_cluster(tenant=tenant, texts=["r one", "r two", "s one", "s two"])
    cluster_split(
        tenant=tenant, cluster_id=cluster.pk, groups=[[a.pk, b.pk], [c.pk, d.pk]], actor=Actor.staff(staff)
    )
    first = cluster.changes.order_by("pk").first()
    assert [x.pk for x in change_undo(tenant=tenant, change_id=first.pk, actor=Actor.staff(staff))] == [
        cluster.pk
    ]
    cluster.refresh_from_db()
    assert cluster.status == "pending"
    assert _statuses([a, b, c, d]) == ["active"] * 4
    assert not KeptApartPair.objects.filter(tenant=tenant).exists()


def test_undoing_a_change_outside_any_cluster_undoes_just_that_change(staff):
    tenant = TenantFactory()
    _, (a, b) = plant_cluster(tenant=tenant, texts=["q one", "q two"])
    change = memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk])
    assert change_undo(tenant=tenant, change_id=change.pk, actor=Actor.staff(staff)) == []
    change.refresh_from_db()
    assert change.undone_by == staff
