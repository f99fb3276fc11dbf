from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memory_app.admin.dashboard.charts import _nice_max, grouped_bars_svg, stacked_hbars_svg
from memory_app.models import DuplicateCluster, EmbeddingCacheStats, Memory, MemoryChange
from memory_app.services.actors import Actor
from memory_app.services.lineage.changes import memory_merge, memory_supersede
from memory_app.services.review.clusters import cluster_merge
from tests.factories import MemoryFactory, TenantFactory
from tests.factories.review import plant_cluster

DASHBOARD = reverse("memory_dashboard")
MEMORIES = reverse("admin:memory_app_memory_changelist")


def lineage_url(memory_id: int) -> str:
    return reverse("admin:memory_app_memory_lineage", args=[memory_id])


def change_undo_url(change_id: int) -> str:
    return reverse("admin:memory_app_memorychange_undo", args=[change_id])


def logged_in(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_memory_list_filters_by_kind_user_namespace_and_status(reviewer):
    tenant = TenantFactory()
    MemoryFactory(tenant=tenant, text="alice memory", user_id="alice", namespace="health")
    MemoryFactory(tenant=tenant, text="bob memory", user_id="bob", namespace="health", kind="semantic")
    MemoryFactory(tenant=tenant, text="old alice memory", user_id="alice", status="superseded")
    client = logged_in(reviewer)
    by_user = client.get(MEMORIES, {"user": "alice", "status__exact": "active"}).content.decode()
    assert "alice memory" in by_user and "bob memory" not in by_user and "old alice memory" not in by_user
    by_kind = client.get(MEMORIES, {"kind__exact": "semantic", "ns": "health"}).content.decode()
    assert "bob memory" in by_kind and "alice memory" not in by_kind
    assert "embedding" not in client.get(MEMORIES).content.decode()


@pytest.mark.django_db
def test_lineage_shows_what_a_memory_was_made_from_and_what_replaced_it(reviewer):
    tenant = TenantFactory()
    a = MemoryFactory(tenant=tenant, text="goal BMI 23")
    b = MemoryFactory(tenant=tenant, text="target BMI 23")
    c = MemoryFactory(tenant=tenant, text="goal BMI 24")
    merge = memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk])
    update = memory_supersede(tenant=tenant, old_id=merge.result_id, new_id=c.pk)
    client = logged_in(reviewer)
    html = client.get(lineage_url(merge.result_id)).content.decode()
    origins, successors = (
        html.split('id="origins"')[1],
        html.split('id="successors"')[1].split('id="origins"')[0],
    )
    assert f"#{a.pk}</a>" in origins and f"#{b.pk}</a>" in origins
    assert f"#{c.pk}</a>" in successors and f"supersede</strong> #{update.pk}" in successors
    assert change_undo_url(update.pk) in html
    leaf = client.get(lineage_url(a.pk)).content.decode()
    assert f"#{merge.result_id}</a>" in leaf and f"#{c.pk}</a>" in leaf  # the whole chain upward


@pytest.mark.django_db
def test_undo_from_the_lineage_view_restores_the_sources(reviewer):
    tenant = TenantFactory()
    a, b = MemoryFactory(tenant=tenant), MemoryFactory(tenant=tenant)
    change = memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk])
    client = logged_in(reviewer)
    assert "Yes, undo" in client.get(change_undo_url(change.pk)).content.decode()
    response = client.post(change_undo_url(change.pk), {"next": lineage_url(a.pk)})
    assert response["Location"] == lineage_url(a.pk)
    assert set(Memory.objects.filter(pk__in=[a.pk, b.pk]).values_list("status", flat=True)) == {"active"}
    assert MemoryChange.objects.get(pk=change.pk).undone_by == reviewer


@pytest.mark.django_db
def test_undo_of_a_review_decision_from_the_lineage_view_reopens_the_cluster(reviewer):
    tenant = TenantFactory()
    cluster, _ = plant_cluster(tenant=tenant, texts=["likes tea", "likes green tea"])
    cluster_merge(tenant=tenant, cluster_id=cluster.pk, actor=Actor.staff(reviewer))
    change = cluster.changes.get()
    client = logged_in(reviewer)
    assert f"decision on cluster #{cluster.pk}" in client.get(change_undo_url(change.pk)).content.decode()
    client.post(change_undo_url(change.pk))
    assert DuplicateCluster.objects.get(pk=cluster.pk).status == "pending"


@pytest.mark.django_db
def test_undo_redirects_only_to_this_site(reviewer):
    tenant = TenantFactory()
    change = memory_merge(
        tenant=tenant, memory_ids=[MemoryFactory(tenant=tenant).pk, MemoryFactory(tenant=tenant).pk]
    )
    response = logged_in(reviewer).post(change_undo_url(change.pk), {"next": "https://evil.example/"})
    assert response["Location"] == lineage_url(change.result_id)


@pytest.mark.django_db
def test_lineage_and_undo_need_permissions(staff_without_permission, non_staff):
    tenant = TenantFactory()
    a, b = MemoryFactory(tenant=tenant), MemoryFactory(tenant=tenant)
    change = memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk])
    client = logged_in(staff_without_permission)
    assert client.get(lineage_url(a.pk)).status_code == 403
    assert client.post(change_undo_url(change.pk)).status_code == 403
    assert client.get(DASHBOARD).status_code == 403
    outsider = logged_in(non_staff)
    for url in (lineage_url(a.pk), change_undo_url(change.pk), DASHBOARD):
        assert "/admin/login/" in outsider.get(url)["Location"]
    assert MemoryChange.objects.get(pk=change.pk).undone_at is None


@pytest.mark.django_db
def test_dashboard_shows_counts_backlog_charts_and_cache_savings(reviewer):
    tenant = TenantFactory()
    for _ in range(3):
        MemoryFactory(tenant=tenant)
    MemoryFactory(tenant=tenant, kind="semantic")
    plant_cluster(tenant=tenant, texts=["q a", "q b"])
    done, _ = plant_cluster(tenant=tenant, texts=["r a", "r b"])
    DuplicateCluster.objects.filter(pk=done.pk).update(
        status="kept_apart", resolved_at=done.created_at + dt.timedelta(hours=3)
    )
    memory_merge(tenant=tenant, memory_ids=[MemoryFactory(tenant=tenant).pk, MemoryFactory(tenant=tenant).pk])
    EmbeddingCacheStats.objects.create(model="all-MiniLM-L6-v2", exact_hits=30, misses=10, tokens_avoided=900)
    response = logged_in(reviewer).get(DASHBOARD, {"tenant": tenant.pk})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="pending-count">1<' in html
    assert "3.0 h" in html  # median time to a decision
    assert "75 %" in html and "900" in html
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == 3
    assert "episodic" in html and "semantic" in html


@pytest.mark.django_db
def test_admin_index_links_to_the_dashboard_and_the_queue(reviewer):
    html = logged_in(reviewer).get(reverse("admin:index")).content.decode()
    assert DASHBOARD in html and reverse("admin:memory_app_duplicatecluster_changelist") in html


def test_chart_axis_tops_are_round_numbers():
    assert [_nice_max(v) for v in (0, 0.3, 1, 3, 7, 12, 99, 101)] == [1, 1, 1, 5, 10, 20, 100, 200]


def test_bar_chart_draws_one_bar_per_value_and_escapes_labels():
    svg = grouped_bars_svg(["<d1>", "d2"], {"merge": [1, 2], "supersede": [0, 4]}, title="t & u")
    assert svg.count("<rect") == 4 + 2  # bars + legend swatches
    assert "&lt;d1&gt;" in svg and "t &amp; u" in svg and "<d1>" not in svg
    assert stacked_hbars_svg({"episodic": {"active": 3, "superseded": 1}}, title="k").count("<rect") == 2 + 2


@pytest.mark.django_db
def test_dashboard_counts_changes_on_the_day_they_happened(reviewer):
    from memory_app.selectors.stats.dashboard import changes_per_day

    tenant = TenantFactory()
    change = memory_merge(
        tenant=tenant, memory_ids=[MemoryFactory(tenant=tenant).pk, MemoryFactory(tenant=tenant).pk]
    )
    MemoryChange.objects.filter(pk=change.pk).update(created_at=timezone.now() - dt.timedelta(days=2))
    series = changes_per_day(tenant=tenant, days=5)
    assert series.series["merge"] == [0, 0, 1, 0, 0]
    assert changes_per_day(tenant=TenantFactory(), days=5).series["merge"] == [0] * 5


def _change_form_data(client: Client, memory: Memory, **changes) -> dict:  # type: ignore[no-untyped-def]
    url = reverse("admin:memory_app_memory_change", args=[memory.pk])
    form = client.get(url).context["adminform"].form
    data = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        value = field.prepare_value(value)
        if isinstance(value, list):
            value = ",".join(value)
        data[name] = "" if value is None else value
    data.update(changes)
    return {k: v for k, v in data.items() if v is not False}


@pytest.mark.django_db
def test_editing_a_memory_text_in_the_admin_makes_a_new_version_through_the_service(admin_client):
    tenant = TenantFactory()
    old = MemoryFactory(tenant=tenant, text="User's BMI goal is 23", topics=["health"])
    url = reverse("admin:memory_app_memory_change", args=[old.pk])
    response = admin_client.post(
        url, _change_form_data(admin_client, old, text="User's BMI goal is 24"), follow=True
    )
    assert response.status_code == 200, response.context["adminform"].form.errors
    old.refresh_from_db()
    new = Memory.objects.get(pk=old.superseded_by_id)
    assert (old.status, new.text, new.topics) == ("superseded", "User's BMI goal is 24", ["health"])
    change = MemoryChange.objects.get(result=new)
    assert change.actor_type == "user" and change.actor_user.username == "admin"


@pytest.mark.django_db
def test_editing_pinned_changes_the_memory_in_place(admin_client):
    memory = MemoryFactory(tenant=TenantFactory(), text="User likes jazz")
    url = reverse("admin:memory_app_memory_change", args=[memory.pk])
    admin_client.post(url, _change_form_data(admin_client, memory, pinned="on"))
    memory.refresh_from_db()
    assert memory.pinned and memory.status == "active" and memory.text == "User likes jazz"


@pytest.mark.django_db
def test_a_text_already_stored_in_the_scope_is_refused_on_the_form(admin_client):
    tenant = TenantFactory()
    MemoryFactory(tenant=tenant, text="User likes jazz")
    other = MemoryFactory(tenant=tenant, text="User likes blues")
    url = reverse("admin:memory_app_memory_change", args=[other.pk])
    response = admin_client.post(url, _change_form_data(admin_client, other, text="user likes jazz!"))
    assert "already says this" in response.content.decode()
    assert Memory.objects.get(pk=other.pk).text == "User likes blues"


@pytest.mark.django_db
def test_deleting_a_memory_in_the_admin_forgets_it_with_its_lineage(admin_client):
    tenant = TenantFactory()
    a, b = MemoryFactory(tenant=tenant), MemoryFactory(tenant=tenant)
    change = memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk])
    url = reverse("admin:memory_app_memory_delete", args=[change.result_id])
    admin_client.post(url, {"post": "yes"})
    assert not Memory.objects.filter(pk__in=[a.pk, b.pk, change.result_id]).exists()
    assert not MemoryChange.objects.filter(pk=change.pk).exists()


@pytest.mark.django_db
def test_memories_cannot_be_added_in_the_admin(admin_client):
    assert admin_client.get(reverse("admin:memory_app_memory_add")).status_code == 403


@pytest.mark.django_db
def test_a_change_record_is_read_only_in_the_admin(admin_client):
    tenant = TenantFactory()
    change = memory_merge(
        tenant=tenant, memory_ids=[MemoryFactory(tenant=tenant).pk, MemoryFactory(tenant=tenant).pk]
    )
    url = reverse("admin:memory_app_memorychange_change", args=[change.pk])
    assert admin_client.get(url).status_code == 200
    admin_client.post(url, {"operation": "supersede", "reason": "edited"})
    change.refresh_from_db()
    assert (change.operation, change.reason) == ("merge", "")
    assert (
        admin_client.get(reverse("admin:memory_app_memorychange_delete", args=[change.pk])).status_code == 403
    )
