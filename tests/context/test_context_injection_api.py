"""POST /api/v1/context: ranking by relevance and confidence, packing within the token budget."""

from __future__ import annotations

import pytest

from memory_app.embeddings.tokens import count_tokens
from tests.factories.recall import remember

URL = "/api/v1/context"


@pytest.fixture
def facts(tenant_a):
    t = tenant_a.tenant
    remember(t, "Hana is allergic to peanuts", confidence=0.9)
    remember(t, "Hana runs every morning before work", confidence=0.6)
    remember(t, "Hana's sister lives in Osaka", confidence=0.95)
    remember(t, "Hana prefers window seats on flights " + "and aisle seats on trains " * 6, confidence=0.3)
    return tenant_a


def post(tc, **body):
    response = tc.client.post(URL, {"filters": {"user_id": "user-1"}, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_conversation_turns_put_the_relevant_fact_first(facts):
    messages = [
        {"role": "user", "content": "I'm planning dinner for Hana."},
        {"role": "assistant", "content": "Sure, anything to watch out for?"},
        {"role": "user", "content": "Which foods with nuts should I avoid, like peanuts?"},
    ]
    body = post(facts, messages=messages, max_tokens=500)
    assert body["facts"][0]["text"] == "Hana is allergic to peanuts"
    assert body["context"].startswith("Relevant memories:\n- Hana is allergic to peanuts")
    assert body["tokens"] == count_tokens(body["context"])


def test_without_any_context_facts_are_ranked_by_confidence(facts):
    body = post(facts, max_tokens=500)
    assert [f["memory"]["confidence"] for f in body["facts"]] == [0.95, 0.9, 0.6, 0.3]
    assert all(f["similarity"] is None for f in body["facts"])


@pytest.mark.parametrize("budget", [1, 8, 15, 30])
def test_the_block_never_exceeds_max_tokens(facts, budget):
    body = post(facts, query="Hana", max_tokens=budget)
    assert body["tokens"] <= budget
    assert body["tokens"] == (count_tokens(body["context"]) if body["context"] else 0)
    assert len(body["facts"]) == body["context"].count("\n- ")


def test_another_tenant_gets_an_empty_context(facts, tenant_b):
    body = post(tenant_b, query="Hana peanuts", max_tokens=500)
    assert body == {
        "context": "",
        "tokens": 0,
        "query": "Hana peanuts",
        "facts": [],
        "degraded": [],
        "time_window": None,
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "messages"),
        ({"messages": "hello"}, "messages"),
        ({"user_turns": 0}, "user_turns"),
    ],
)
def test_bad_context_input_is_a_400(tenant_a, body, field):
    response = tenant_a.client.post(URL, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
