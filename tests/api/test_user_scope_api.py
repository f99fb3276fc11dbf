"""One way to name the user: `user_id` at the top level of every read (filters.user_id an alias),
episodic memory never mixed across users unless asked, no episodic memory stored without a user."""

from __future__ import annotations

import pytest

from memory_app.models import Memory
from tests.factories.recall import remember

SEARCH, CONTEXT, LIST, STORE = (
    "/api/v1/memories/search",
    "/api/v1/context",
    "/api/v1/memories",
    "/api/v1/memories",
)


@pytest.fixture
def allergies(tenant_a):
    t = tenant_a.tenant
    remember(t, "Ana is allergic to peanuts", user_id="ana")
    remember(t, "Ben is allergic to shellfish", user_id="ben")
    remember(t, "Cleo is allergic to gluten", user_id="cleo")
    remember(t, "Peanut allergies can cause anaphylaxis", user_id="", kind="semantic")
    return tenant_a


def texts(body):
    return sorted(hit["text"] for hit in body.get("results", body.get("facts", [])))


@pytest.mark.parametrize("url", [SEARCH, CONTEXT])
@pytest.mark.parametrize("where", ["top", "filters", "both"])
def test_the_user_may_be_named_at_the_top_level_or_in_filters(allergies, url, where):
    scope = {
        "top": {"user_id": "ben"},
        "filters": {"filters": {"user_id": "ben"}},
        "both": {"user_id": "ben", "filters": {"user_id": "ben"}},
    }[where]
    response = allergies.client.post(url, {"query": "food allergies", **scope}, format="json")
    assert response.status_code == 200, response.content
    assert texts(response.json()) == ["Ben is allergic to shellfish"]


@pytest.mark.parametrize("url", [SEARCH, CONTEXT])
def test_a_top_level_user_that_disagrees_with_filters_is_a_400_naming_both(allergies, url):
    body = {"query": "allergies", "user_id": "ana", "filters": {"user_id": "ben"}}
    response = allergies.client.post(url, body, format="json")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert "user_id" in fields and "user_id" in fields["filters"], fields


@pytest.mark.parametrize("url", [SEARCH, CONTEXT])
def test_an_episodic_read_without_a_user_is_a_400_naming_user_id(allergies, url):
    response = allergies.client.post(url, {"query": "what is the user allergic to?"}, format="json")
    assert response.status_code == 400
    assert "user_id" in response.json()["error"]["fields"]


def test_the_context_without_a_user_never_mixes_users_and_all_users_mixes_them_on_request(allergies):
    refused = allergies.client.post(CONTEXT, {"query": "allergic"}, format="json")
    assert refused.status_code == 400
    mixed = allergies.client.post(CONTEXT, {"query": "allergic", "all_users": True}, format="json")
    assert mixed.status_code == 200, mixed.content
    users = {fact["memory"]["user_id"] for fact in mixed.json()["facts"]}
    assert {"ana", "ben", "cleo"} <= users
    one = allergies.client.post(CONTEXT, {"query": "allergic", "user_id": "ana"}, format="json")
    assert {fact["memory"]["user_id"] for fact in one.json()["facts"]} == {"ana"}


def test_all_users_with_a_user_is_a_400(allergies):
    body = {"query": "allergic", "all_users": True, "user_id": "ana"}
    response = allergies.client.post(SEARCH, body, format="json")
    assert response.status_code == 400
    assert "all_users" in response.json()["error"]["fields"]


def test_shared_knowledge_needs_no_user(allergies):
    body = {"query": "peanut allergy", "filters": {"kind": "semantic"}}
    response = allergies.client.post(SEARCH, body, format="json")
    assert response.status_code == 200, response.content
    assert texts(response.json()) == ["Peanut allergies can cause anaphylaxis"]


def test_the_list_takes_the_user_at_the_top_level(allergies):
    response = allergies.client.get(LIST, {"user_id": "cleo"})
    assert response.status_code == 200, response.content
    assert [row["text"] for row in response.json()["results"]] == ["Cleo is allergic to gluten"]


def test_an_episodic_store_without_a_user_is_a_400_naming_user_id_and_stores_nothing(tenant_a):
    response = tenant_a.client.post(STORE, {"text": "User is vegan"}, format="json")
    assert response.status_code == 400
    assert "user_id" in response.json()["error"]["fields"]
    batch = [{"text": "User's dog is called Rex", "user_id": "u1"}, {"text": "User is vegan"}]
    response = tenant_a.client.post(STORE, batch, format="json")
    assert response.status_code == 400
    assert "items[1].user_id" in response.json()["error"]["fields"]
    assert not Memory.objects.filter(tenant=tenant_a.tenant).exists()


def test_a_semantic_store_needs_no_user(tenant_a):
    body = {"text": "Paris is the capital of France", "kind": "semantic"}
    response = tenant_a.client.post(STORE, body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["memory"]["user_id"] == ""


def test_another_tenant_reads_nothing_of_a_named_user(allergies, tenant_b):
    response = tenant_b.client.post(SEARCH, {"query": "allergic", "user_id": "ana"}, format="json")
    assert response.status_code == 200
    assert response.json()["results"] == []
