from __future__ import annotations

import json

import httpx
import pytest
import respx
from django.test import Client
from django.urls import reverse

from memory_app.models import DuplicateCluster, KeptApartPair, Memory
from tests.factories import TenantFactory
from tests.factories.review import plant_cluster

pytestmark = pytest.mark.django_db

LLM_URL = "http://llm.test/v1/chat/completions"
QUEUE = reverse("admin:memory_app_duplicatecluster_changelist")


def review_url(cluster: DuplicateCluster) -> str:
    return reverse("admin:memory_app_duplicatecluster_review", args=[cluster.pk])


def undo_url(cluster: DuplicateCluster) -> str:
    return reverse("admin:memory_app_duplicatecluster_undo", args=[cluster.pk])


def logged_in(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def status_of(cluster: DuplicateCluster) -> str:
    return DuplicateCluster.objects.get(pk=cluster.pk).status


def test_queue_lists_pending_clusters_most_confident_first(reviewer):
    tenant = TenantFactory()
    low, _ = plant_cluster(tenant=tenant, texts=["walks the dog", "walks her dog"], confidence=0.55)
    high, _ = plant_cluster(tenant=tenant, texts=["likes tea", "likes tea a lot"], confidence=0.97)
    done, _ = plant_cluster(tenant=tenant, texts=["x", "y"], confidence=0.99)
    DuplicateCluster.objects.filter(pk=done.pk).update(status="merged")
    html = logged_in(reviewer).get(QUEUE).content.decode()
    assert html.index(f"Review #{high.pk}") < html.index(f"Review #{low.pk}")
    assert f"#{done.pk}<" not in html
    assert "0.97" in html and "Review queue: possible duplicates" in html


def test_queue_search_finds_clusters_by_member_text(reviewer):
    tenant = TenantFactory()
    tea, _ = plant_cluster(tenant=tenant, texts=["likes green tea", "likes tea"])
    dog, _ = plant_cluster(tenant=tenant, texts=["has a dog", "owns a dog"])
    html = logged_in(reviewer).get(QUEUE, {"q": "green tea"}).content.decode()
    assert f"Review #{tea.pk}" in html and f"Review #{dog.pk}" not in html


def test_queue_filters_by_confidence_band_and_shows_decided_on_request(reviewer):
    tenant = TenantFactory()
    high, _ = plant_cluster(tenant=tenant, texts=["a b", "a c"], confidence=0.95)
    low, _ = plant_cluster(tenant=tenant, texts=["d e", "d f"], confidence=0.5)
    DuplicateCluster.objects.filter(pk=low.pk).update(status="kept_apart")
    client = logged_in(reviewer)
    assert f"Review #{high.pk}" not in client.get(QUEUE, {"confidence": "low"}).content.decode()
    assert f"Open #{low.pk}" in client.get(QUEUE, {"status": "all"}).content.decode()


def test_cluster_page_shows_members_side_by_side_with_word_differences(reviewer):
    tenant = TenantFactory()
    cluster, (a, b) = plant_cluster(
        tenant=tenant, texts=["User's target BMI is 23", "User's target BMI is 24"], verdict="update"
    )
    html = logged_in(reviewer).get(review_url(cluster)).content.decode()
    assert '<mark class="diff">23</mark>' in html and '<mark class="diff">24</mark>' in html
    assert f'id="member-{a.pk}"' in html and f'id="member-{b.pk}"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert "Suggest a text (LLM)" not in html  # no LLM configured in tests


def test_merge_with_the_chosen_text_goes_to_the_next_cluster_with_an_undo_link(reviewer):
    tenant = TenantFactory()
    cluster, (a, b) = plant_cluster(tenant=tenant, texts=["likes tea", "likes green tea"], confidence=0.9)
    following, _ = plant_cluster(tenant=tenant, texts=["runs", "runs daily"], confidence=0.8)
    client = logged_in(reviewer)
    response = client.post(
        review_url(cluster), {"action": "merge", "survivor": a.pk, "member": [a.pk, b.pk]}, follow=True
    )
    assert response.redirect_chain[-1][0] == review_url(following)
    assert undo_url(cluster) in response.content.decode()
    cluster.refresh_from_db()
    change = cluster.changes.get()
    assert (cluster.status, cluster.resolved_by, change.result.text) == ("merged", reviewer, "likes tea")


def test_merge_with_an_edited_text_uses_that_text(reviewer):
    tenant = TenantFactory()
    cluster, _ = plant_cluster(tenant=tenant, texts=["likes tea", "likes green tea"])
    logged_in(reviewer).post(review_url(cluster), {"action": "merge", "text": "User likes green tea"})
    assert DuplicateCluster.objects.get(pk=cluster.pk).changes.get().result.text == "User likes green tea"


def test_keep_apart_records_the_pairs_and_the_last_cluster_returns_to_the_queue(reviewer):
    tenant = TenantFactory()
    cluster, _ = plant_cluster(tenant=tenant, texts=["grinder broken", "machine broken", "kettle broken"])
    response = logged_in(reviewer).post(review_url(cluster), {"action": "keep_apart"})
    assert response.status_code == 302 and response["Location"] == QUEUE
    assert status_of(cluster) == "kept_apart"
    assert KeptApartPair.objects.filter(created_by=reviewer).count() == 3


def test_mark_as_update_uses_the_chosen_current_value(reviewer):
    tenant = TenantFactory()
    cluster, (old, new) = plant_cluster(tenant=tenant, texts=["goal 23", "goal 24"], verdict="update")
    logged_in(reviewer).post(review_url(cluster), {"action": "mark_update", "newest": old.pk})
    new.refresh_from_db()
    assert (status_of(cluster), new.status, new.superseded_by_id) == ("superseded", "superseded", old.pk)


def test_split_merges_each_lettered_group(reviewer):
    tenant = TenantFactory()
    cluster, (a, b, c, d) = plant_cluster(
        tenant=tenant, texts=["dog Rex", "dog is Rex", "cat Tom", "cat is Tom"]
    )
    data = {"action": "split", f"group_{a.pk}": "A", f"group_{b.pk}": "A", f"group_{c.pk}": "B"}
    data[f"group_{d.pk}"] = "B"
    logged_in(reviewer).post(review_url(cluster), data)
    assert status_of(cluster) == "split"
    assert DuplicateCluster.objects.get(pk=cluster.pk).changes.count() == 2


def test_a_refused_action_shows_the_reason_and_changes_nothing(reviewer):
    tenant = TenantFactory()
    cluster, (a, _b) = plant_cluster(tenant=tenant, texts=["one", "two"])
    response = logged_in(reviewer).post(
        review_url(cluster), {"action": "split", f"group_{a.pk}": "A"}, follow=True
    )
    assert "at least two groups" in response.content.decode()
    assert status_of(cluster) == "pending"


def test_undo_page_confirms_then_restores_and_reopens(reviewer):
    tenant = TenantFactory()
    cluster, members = plant_cluster(tenant=tenant, texts=["likes tea", "likes green tea"])
    client = logged_in(reviewer)
    client.post(review_url(cluster), {"action": "merge"})
    assert "Yes, undo" in client.get(undo_url(cluster)).content.decode()
    response = client.post(undo_url(cluster), follow=True)
    assert "pending again" in response.content.decode()
    assert status_of(cluster) == "pending"
    assert set(Memory.objects.filter(pk__in=[m.pk for m in members]).values_list("status", flat=True)) == {
        "active"
    }


@pytest.mark.parametrize(
    ("action", "message", "status", "pairs_kept_apart"),
    [
        ("bulk_merge", "Merged 2 cluster(s)", "merged", 0),
        ("bulk_keep_apart", "Kept apart 2 cluster(s)", "kept_apart", 2),
    ],
)
def test_bulk_actions_resolve_every_selected_cluster(reviewer, action, message, status, pairs_kept_apart):
    tenant = TenantFactory()
    first, _ = plant_cluster(tenant=tenant, texts=["likes tea", "likes tea a lot"], confidence=0.95)
    second, _ = plant_cluster(tenant=tenant, texts=["runs daily", "runs every day"], confidence=0.92)
    response = logged_in(reviewer).post(
        QUEUE, {"action": action, "_selected_action": [first.pk, second.pk]}, follow=True
    )
    assert message in response.content.decode()
    assert {status_of(first), status_of(second)} == {status}
    assert KeptApartPair.objects.filter(tenant=tenant).count() == pairs_kept_apart


def test_staff_without_permission_can_neither_see_nor_resolve_clusters(staff_without_permission):
    cluster, _ = plant_cluster(tenant=TenantFactory(), texts=["a", "b"])
    client = logged_in(staff_without_permission)
    assert client.get(QUEUE).status_code == 403
    assert client.get(review_url(cluster)).status_code == 403
    assert client.post(review_url(cluster), {"action": "keep_apart"}).status_code == 403
    assert client.post(undo_url(cluster)).status_code == 403
    assert status_of(cluster) == "pending"


def test_view_only_staff_sees_the_cluster_but_cannot_decide(db):
    from tests.conftest import _admin_user

    viewer = _admin_user("viewer", is_staff=True, permissions=("view_duplicatecluster",))
    cluster, _ = plant_cluster(tenant=TenantFactory(), texts=["a", "b"])
    client = logged_in(viewer)
    html = client.get(review_url(cluster)).content.decode()
    assert 'value="keep_apart"' not in html
    assert client.post(review_url(cluster), {"action": "keep_apart"}).status_code == 403
    queue = client.get(QUEUE).content.decode()
    assert 'value="bulk_merge"' not in queue and 'value="bulk_keep_apart"' not in queue
    client.post(QUEUE, {"action": "bulk_merge", "_selected_action": [cluster.pk]})
    client.post(QUEUE, {"action": "bulk_keep_apart", "_selected_action": [cluster.pk]})
    assert status_of(cluster) == "pending"
    assert not KeptApartPair.objects.exists()


def test_non_staff_and_anonymous_users_are_sent_to_the_login_page(non_staff):
    cluster, _ = plant_cluster(tenant=TenantFactory(), texts=["a", "b"])
    for client in (logged_in(non_staff), Client()):
        for url in (QUEUE, review_url(cluster), undo_url(cluster)):
            response = client.get(url)
            assert response.status_code == 302 and "/admin/login/" in response["Location"]
        assert client.post(review_url(cluster), {"action": "keep_apart"}).status_code == 302
    assert status_of(cluster) == "pending"


def test_actions_are_csrf_protected(reviewer):
    cluster, _ = plant_cluster(tenant=TenantFactory(), texts=["a", "b"])
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    assert client.post(review_url(cluster), {"action": "keep_apart"}).status_code == 403
    assert status_of(cluster) == "pending"


def test_llm_suggestion_button_is_hidden_without_an_llm(reviewer, settings):
    settings.LLM_MODEL = ""
    cluster, _ = plant_cluster(tenant=TenantFactory(), texts=["a b", "a c"])
    assert "Suggest a text (LLM)" not in logged_in(reviewer).get(review_url(cluster)).content.decode()


@pytest.fixture
def llm(settings):  # type: ignore[no-untyped-def]
    settings.OPENAI_BASE_URL = "http://llm.test/v1"
    settings.OPENAI_API_KEY = "sk-test"
    settings.LLM_MODEL = "test-model"
    settings.DEDUP_LLM_TIMEOUT_SECONDS = 2.0
    with respx.mock(assert_all_called=False) as router:
        yield router.post(LLM_URL)


def _llm_answer(relation: str, merged_text: str | None) -> httpx.Response:
    entry = {"index": 0, "relation": relation, "confidence": 0.9, "merged_text": merged_text}
    content = json.dumps({"judgements": [entry]})
    message = {"role": "assistant", "content": content}
    return httpx.Response(
        200,
        json={
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        },
    )


def test_llm_suggestion_fills_the_merge_text_without_saving(reviewer, llm):
    llm.mock(return_value=_llm_answer("duplicate", "User likes green tea, every morning"))
    cluster, _ = plant_cluster(tenant=TenantFactory(), texts=["likes tea", "likes green tea every morning"])
    client = logged_in(reviewer)
    assert "Suggest a text (LLM)" in client.get(review_url(cluster)).content.decode()
    html = client.post(review_url(cluster), {"action": "suggest"}).content.decode()
    assert ">User likes green tea, every morning</textarea>" in html
    assert llm.call_count == 1
    assert status_of(cluster) == "pending"


def test_a_failing_llm_suggestion_degrades_to_a_warning(reviewer, llm):
    llm.mock(return_value=httpx.Response(500, json={"error": {"message": "down"}}))
    cluster, _ = plant_cluster(tenant=TenantFactory(), texts=["likes tea", "likes green tea"])
    response = logged_in(reviewer).post(review_url(cluster), {"action": "suggest"})
    assert response.status_code == 200 and "No LLM suggestion is available" in response.content.decode()
    assert status_of(cluster) == "pending"


def test_cluster_page_highlights_the_decision_the_judge_suggests(reviewer):
    cluster, _ = plant_cluster(tenant=TenantFactory(), texts=["goal 23", "goal 24"], verdict="update")
    html = logged_in(reviewer).get(review_url(cluster)).content.decode()
    assert 'id="update-form" class="decision recommended"' in html


def test_a_cluster_whose_members_were_merged_elsewhere_says_so_and_can_be_closed(reviewer):
    from memory_app.services.lineage.changes import memory_merge

    tenant = TenantFactory()
    cluster, (a, b) = plant_cluster(tenant=tenant, texts=["likes tea", "likes green tea"])
    memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk])
    client = logged_in(reviewer)
    assert "Nothing is left to merge" in client.get(review_url(cluster)).content.decode()
    assert (
        "at least two active members"
        in client.post(review_url(cluster), {"action": "merge"}, follow=True).content.decode()
    )
    client.post(review_url(cluster), {"action": "keep_apart"})
    assert status_of(cluster) == "kept_apart"


def test_queue_can_be_sorted_by_size_instead_of_confidence(reviewer):
    tenant = TenantFactory()
    small, _ = plant_cluster(tenant=tenant, texts=["a b", "a c"], confidence=0.9)
    big, _ = plant_cluster(tenant=tenant, texts=["d e", "d f", "d g"], confidence=0.5)
    html = logged_in(reviewer).get(QUEUE, {"o": "-3"}).content.decode()  # column 3: size, descending
    assert html.index(f"Review #{big.pk}") < html.index(f"Review #{small.pk}")
