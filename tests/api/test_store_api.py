"""POST /api/v1/memories: outcomes, batches, options and every kind of bad input (nothing stored)."""

from __future__ import annotations

import pytest

from memory_app.models import Memory

pytestmark = pytest.mark.django_db

URL = "/api/v1/memories"


def _count(tenant) -> int:  # type: ignore[no-untyped-def]
    return Memory.objects.filter(tenant=tenant).count()


def test_storing_one_memory_answers_201_with_its_outcome_and_row(tenant_a):
    response = tenant_a.client.post(
        URL, {"text": "User prefers morning workouts", "user_id": "u1"}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert body["outcome"] == "created"
    assert body["memory"]["id"] == body["memory_id"]
    assert body["memory"]["text"] == "User prefers morning workouts"
    assert body["memory"]["embedding_model"]
    again = tenant_a.client.post(
        URL, {"text": "user prefers morning workouts.", "user_id": "u1"}, format="json"
    )
    assert again.status_code == 200
    assert again.json()["outcome"] == "duplicate_of" and again.json()["memory_id"] == body["memory_id"]


def test_a_created_memory_is_answered_as_a_read_of_it_shows_it(tenant_a):
    body = {
        "text": "User flies to Lisbon on 3 May",
        "user_id": "u1",
        "topics": ["travel"],
        "metadata": {"source": {"app": "chat", "turn": 7}, "a": 1},
        "event_date": "2026-05-03T10:00:00+02:00",
        "confidence": 0.8,
    }
    stored = tenant_a.client.post(URL, body, format="json").json()
    read = tenant_a.client.get(f"{URL}/{stored['memory_id']}").json()
    ignore = {"last_accessed_at", "access_count", "updated_at"}
    assert {k: v for k, v in stored["memory"].items() if k not in ignore} == {
        k: v for k, v in read.items() if k not in ignore
    }


def test_a_row_created_then_merged_in_the_same_call_is_answered_as_it_is_now(tenant_a):
    items = [
        {"text": "User's sister Ana lives in Porto", "user_id": "u1"},
        {"text": "User's sister Ana lives in Porto.", "user_id": "u1"},
    ]
    outcomes = tenant_a.client.post(URL, items, format="json").json()
    first = outcomes[0]
    row = Memory.objects.get(pk=first["memory_id"])
    assert first["memory"]["status"] == row.status


def test_a_list_answers_one_outcome_per_item_in_order(tenant_a):
    items = [
        {"text": "User's dog is called Rex", "user_id": "u1", "topics": ["pets"]},
        {"text": "User is allergic to peanuts", "user_id": "u1", "kind": "episodic", "confidence": 0.9},
        {"text": "Water boils at 100 C at sea level", "kind": "semantic", "namespace": "physics"},
        {"text": "user's dog is called rex", "user_id": "u1"},
    ]
    response = tenant_a.client.post(URL, items, format="json")
    assert response.status_code == 201
    body = response.json()
    assert [o["outcome"] for o in body] == ["created", "created", "created", "duplicate_of"]
    assert body[3]["memory_id"] == body[0]["memory_id"]
    assert body[1]["memory"]["confidence"] == 0.9
    assert body[2]["memory"]["kind"] == "semantic"


def test_deduplicate_false_as_a_query_option_is_accepted_and_bad_options_are_400(tenant_a):
    ok = tenant_a.client.post(
        f"{URL}?deduplicate=false&judge=offline", {"text": "User likes jazz", "user_id": "u1"}, format="json"
    )
    assert ok.status_code == 201
    bad = tenant_a.client.post(
        f"{URL}?judge=oracle&candidate_radius=5", {"text": "User likes blues", "user_id": "u1"}, format="json"
    )
    assert bad.status_code == 400
    assert set(bad.json()["error"]["fields"]) == {"judge", "candidate_radius"}
    assert _count(tenant_a.tenant) == 1


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"text": ""}, "text"),
        ({"text": "   \n "}, "text"),
        ({"user_id": "u1"}, "text"),
        ({"text": 123}, "text"),
        ({"text": "ok", "kind": "dream"}, "kind"),
        ({"text": "ok", "confidence": 1.5}, "confidence"),
        ({"text": "ok", "confidence": -0.1}, "confidence"),
        ({"text": "ok", "topics": "pets"}, "topics"),
        ({"text": "ok", "metadata": [1, 2]}, "metadata"),
        ({"text": "ok", "event_date": "last tuesday"}, "event_date"),
        ({"text": "ok", "colour": "red"}, "colour"),
        ({"text": "ok", "namespace": ""}, "namespace"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(tenant_a, payload, field):
    response = tenant_a.client.post(URL, payload, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["fields"] and error["fields"][field]
    assert _count(tenant_a.tenant) == 0


def test_oversized_text_is_refused_with_the_limit_in_the_message(tenant_a, settings):
    settings.MEMORY_MAX_TEXT_CHARS = 100
    response = tenant_a.client.post(URL, {"text": "x" * 101}, format="json")
    assert response.status_code == 400
    assert "100" in response.json()["error"]["fields"]["text"][0]
    assert _count(tenant_a.tenant) == 0


def test_one_bad_item_in_a_list_names_the_item_and_stores_none_of_them(tenant_a):
    items = [{"text": "fine one"}, {"text": " "}, {"text": "fine two"}, {"text": "x", "confidence": "high"}]
    items = [{**item, "user_id": "u1"} for item in items]
    response = tenant_a.client.post(URL, items, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error["fields"]) == {"items[1].text", "items[3].confidence"}
    assert "1" in error["message"] and "3" in error["message"]
    assert _count(tenant_a.tenant) == 0


def test_a_list_over_the_batch_limit_or_an_empty_list_or_a_scalar_is_refused(tenant_a, settings):
    settings.STORE_MAX_BATCH = 2
    over = tenant_a.client.post(URL, [{"text": f"fact {i}"} for i in range(3)], format="json")
    assert over.status_code == 400 and "items" in over.json()["error"]["fields"]
    assert tenant_a.client.post(URL, [], format="json").status_code == 400
    assert tenant_a.client.post(URL, "just text", format="json").status_code == 400
    assert tenant_a.client.post(URL, ["just text"], format="json").status_code == 400
    assert _count(tenant_a.tenant) == 0


def test_stores_without_a_key_are_401_and_a_stored_memory_is_only_in_its_tenant(
    tenant_a, tenant_b, anon_client
):
    assert anon_client.post(URL, {"text": "x"}, format="json").status_code == 401
    pin = {"text": "User's PIN hint is blue", "user_id": "u1"}
    body = tenant_a.client.post(URL, pin, format="json").json()
    assert tenant_b.client.post(URL, pin, format="json").json()["outcome"] == "created"
    assert Memory.objects.get(pk=body["memory_id"]).tenant == tenant_a.tenant
    assert tenant_b.client.get(f"{URL}/{body['memory_id']}").status_code == 404


def test_the_openapi_schema_documents_every_write_endpoint(anon_client):
    paths = anon_client.get("/api/schema/?format=json").json()["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/memories"])
    assert {"get", "patch", "delete"} <= set(paths["/api/v1/memories/{memory_id}"])
    assert "post" in paths["/api/v1/memories/{memory_id}/feedback"]
    assert "get" in paths["/api/v1/memories/{memory_id}/lineage"]
    assert "post" in paths["/api/v1/merges/{change_id}/undo"]
