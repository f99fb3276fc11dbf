"""Relevance, not rank: absolute scores, a floor under which nothing is injected, and no text
repeated across the parts of /context/all."""

from __future__ import annotations

import pytest

from tests.factories.recall import remember

CONTEXT, CONTEXT_ALL = "/api/v1/context", "/api/v1/context/all"


@pytest.fixture
def workouts(tenant_a):
    remember(tenant_a.tenant, "User prefers morning workouts", user_id="u1")
    remember(tenant_a.tenant, "User lifts weights on Mondays", user_id="u1")
    return tenant_a


def test_a_query_unrelated_to_every_memory_injects_nothing(workouts):
    body = workouts.client.post(CONTEXT, {"query": "dinner ideas", "user_id": "u1"}, format="json").json()
    assert body["facts"] == [] and body["context"] == ""
    turn = workouts.client.post(CONTEXT_ALL, {"query": "dinner ideas", "user_id": "u1"}, format="json").json()
    assert turn["episodic"]["count"] == 0 and turn["counts"]["episodic"] == 0


def test_scores_are_absolute_not_scaled_to_the_best_hit(workouts):
    body = workouts.client.post(CONTEXT, {"query": "workouts", "user_id": "u1"}, format="json").json()
    assert body["facts"], body
    top = body["facts"][0]
    assert top["text"] == "User prefers morning workouts"
    assert 0 < top["similarity"] < 1
    turn = workouts.client.post(CONTEXT_ALL, {"query": "workouts", "user_id": "u1"}, format="json").json()
    [row, *_] = turn["episodic"]["memories"]
    assert row["relevance"] == pytest.approx(top["similarity"], abs=1e-6)


def test_no_part_of_the_turn_context_repeats_a_text_another_part_holds(tenant_a, tenant_b):
    messages = [
        {"role": "user", "speaker": "Ana", "content": "I adopted a puppy named Rex last week."},
        {"role": "user", "speaker": "Ana", "content": "Rex loves chasing tennis balls in the park."},
    ]
    payload = {"session_id": "s1", "user_id": "u1", "messages": messages, "extraction": "rules"}
    assert tenant_a.client.post("/api/v1/interactions", payload, format="json").status_code == 201
    query = {"query": "What is Ana's puppy called?", "user_id": "u1", "session_id": "s1"}
    turn = tenant_a.client.post(CONTEXT_ALL, query, format="json").json()
    said = {f"{m['speaker']}: {m['content']}" for m in turn["short_term"]["messages"]}
    assert len(said) == 2
    remembered = {row["text"] for row in turn["episodic"]["memories"]}
    assert not said & remembered
    assert sum(turn["formatted"].count(text) for text in said) == len(said)
    # without the session the messages come back as memories
    alone = tenant_a.client.post(CONTEXT_ALL, {**query, "session_id": ""}, format="json").json()
    assert alone["episodic"]["count"] > len(remembered)
    assert tenant_b.client.post(CONTEXT_ALL, query, format="json").json()["counts"]["episodic"] == 0
