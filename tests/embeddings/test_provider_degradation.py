"""The embedding provider down (stubbed at its HTTP API with respx): stores are kept and say their
embedding is pending, searches say they ran on full text only, a dead provider is not waited on per
request, and the pending vectors are filled in once it answers again."""

from __future__ import annotations

import time

import httpx
import pytest
import respx
from django.test import override_settings

from memory_app.embeddings.breaker import breaker
from memory_app.embeddings.cache.lookup import health
from memory_app.embeddings.cache.stats import stats_pending_reset
from memory_app.models import Memory
from memory_app.tasks import memory_embeddings_fill, memory_embeddings_sweep
from tests.embeddings.test_embedding_openai import BASE, OPENAI, embeddings_reply

SEARCH = "/api/v1/memories/search"


@pytest.fixture(autouse=True)
def _openai(db):  # type: ignore[no-untyped-def]
    stats_pending_reset()
    health.broken = False
    with override_settings(**OPENAI, EMBEDDING_BREAKER_SECONDS=60):
        yield


@pytest.fixture
def provider_down():  # type: ignore[no-untyped-def]
    with respx.mock(assert_all_called=False) as router:
        route = router.post(f"{BASE}/embeddings").mock(side_effect=httpx.ConnectError("connection refused"))
        yield route


def test_a_store_with_the_provider_down_is_kept_and_says_its_embedding_is_pending(tenant_a, provider_down):
    """The report: 201 "created" with no embedding and nothing said about it."""
    response = tenant_a.client.post(
        "/api/v1/memories", {"text": "User sails on weekends", "user_id": "u1"}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert body["outcome"] == "created" and body["embedding_pending"] is True
    assert body["warnings"] and body["warnings"][0].startswith("embedding_pending")
    memory = Memory.objects.get(pk=body["memory_id"])
    assert memory.text == "User sails on weekends" and memory.embedding is None


def test_a_pending_store_queues_the_fill_after_commit(
    tenant_a, provider_down, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = tenant_a.client.post(
            "/api/v1/memories", {"text": "User owns a kayak", "user_id": "u1"}, format="json"
        )
    assert response.json()["embedding_pending"] is True
    assert callbacks, "the fill is queued on commit"


def test_a_search_with_the_provider_down_says_it_ran_on_full_text(tenant_a, provider_down):
    with respx.mock(assert_all_called=False) as up:
        up.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
        tenant_a.client.post(
            "/api/v1/memories", {"text": "User sails on weekends", "user_id": "u1"}, format="json"
        )
    response = tenant_a.client.post(SEARCH, {"query": "sails weekends", "user_id": "u1"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["degraded"] == ["query_embedding_failed: fulltext only"]
    assert body["mode"] == "fulltext" and body["results"][0]["text"] == "User sails on weekends"


def test_a_healthy_search_says_nothing_is_degraded(tenant_a):
    with respx.mock(assert_all_called=False) as up:
        up.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
        response = tenant_a.client.post(SEARCH, {"query": "anything", "user_id": "u1"}, format="json")
    assert response.json()["degraded"] == []


def test_a_dead_provider_is_not_called_again_on_every_request(tenant_a, provider_down):
    """The report: each degraded search took 6-20 s waiting on the provider."""
    tenant_a.client.post(SEARCH, {"query": "first", "user_id": "u1"}, format="json")
    calls_after_first = provider_down.call_count
    assert calls_after_first == 1 + OPENAI["OPENAI_EMBEDDING_MAX_RETRIES"]
    started = time.perf_counter()
    for i in range(5):
        response = tenant_a.client.post(SEARCH, {"query": f"query {i}", "user_id": "u1"}, format="json")
        assert response.json()["degraded"]
    assert provider_down.call_count == calls_after_first  # the circuit is open
    assert time.perf_counter() - started < 5.0
    assert breaker.state().state == "open"


@override_settings(EMBEDDING_BREAKER_SECONDS=0)
def test_the_circuit_lets_a_trial_through_and_closes_when_the_provider_answers(tenant_a, provider_down):
    tenant_a.client.post(SEARCH, {"query": "first", "user_id": "u1"}, format="json")
    provider_down.mock(side_effect=embeddings_reply)
    response = tenant_a.client.post(SEARCH, {"query": "second", "user_id": "u1"}, format="json")
    assert response.json()["degraded"] == []
    assert breaker.state().state == "closed"


def test_the_fill_task_writes_the_vectors_once_the_provider_answers(tenant_a, provider_down):
    ids = [
        tenant_a.client.post("/api/v1/memories", {"text": text, "user_id": "u1"}, format="json").json()[
            "memory_id"
        ]
        for text in ("User plays chess", "User plays go")
    ]
    assert Memory.objects.filter(pk__in=ids, embedding__isnull=True).count() == 2
    breaker.reset()
    provider_down.mock(side_effect=embeddings_reply)
    assert memory_embeddings_fill.apply(args=[ids]).get() == 2
    assert Memory.objects.filter(pk__in=ids, embedding__isnull=True).count() == 0
    assert memory_embeddings_fill.apply(args=[ids]).get() == 0  # idempotent


def test_the_sweep_fills_memories_left_pending(tenant_a, provider_down):
    memory_id = tenant_a.client.post(
        "/api/v1/memories", {"text": "User hikes", "user_id": "u1"}, format="json"
    ).json()["memory_id"]
    breaker.reset()
    provider_down.mock(side_effect=embeddings_reply)
    assert memory_embeddings_sweep.apply().get() == 1
    assert Memory.objects.get(pk=memory_id).embedding is not None
    assert memory_embeddings_sweep.apply().get() == 0


def test_context_for_injection_says_when_its_search_was_degraded(tenant_a, provider_down):
    body = {"query": "what does the user do", "user_id": "u1"}
    response = tenant_a.client.post("/api/v1/context", body, format="json")
    assert response.status_code == 200
    assert response.json()["degraded"] == ["query_embedding_failed: fulltext only"]


def test_memories_extracted_from_a_turn_say_their_embedding_is_pending(tenant_a, provider_down):
    response = tenant_a.client.post(
        "/api/v1/interactions",
        {"session_id": "s1", "user_id": "u1", "user_message": "I love hiking in the mountains."},
        format="json",
    )
    assert response.status_code == 201, response.json()
    memories = response.json()["memories"]
    assert memories and all(m["embedding_pending"] for m in memories)
