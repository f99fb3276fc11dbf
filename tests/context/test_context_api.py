from __future__ import annotations

import httpx
import pytest
import respx

from memory_app.services.kinds.procedures import procedure_record
from memory_app.services.kinds.sessions import MessageInput, session_append
from tests.factories import ProcedureFactory, unit_vector
from tests.factories.kinds import memories_with_embeddings

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_relevance_floor(settings):
    """These tests are about the parts and their budget, on a seed whose memories are mostly
    unrelated to the query; the floor has its own tests (test_context_relevance.py)."""
    settings.CONTEXT_RELEVANCE_FLOOR = 0.0


def seed(tenant) -> None:
    memories_with_embeddings(
        tenant,
        ["User prefers morning workouts", "User is allergic to peanuts", "User lives in Lisbon"],
        user_id="u1",
    )
    memories_with_embeddings(tenant, ["User hates mornings"], user_id="u2")
    memories_with_embeddings(
        tenant,
        ["Normal resting heart rate is 60-100 bpm", "Peanut allergies can cause anaphylaxis"],
        kind="semantic",
        category="health",
    )
    session_append(
        tenant=tenant,
        session_id="s1",
        user_id="u1",
        messages=[MessageInput("user", "Plan my workout"), MessageInput("assistant", "Sure, when?")],
    )
    for _ in range(5):
        procedure_record(
            tenant=tenant,
            query="plan my workout",
            tool_sequence=["calendar", "workout_planner"],
            execution_time_ms=120,
            success_score=0.9,
            user_id="u1",
        )


def ask(client, **body):
    return client.post("/api/v1/context/all", {"query": "plan my workout", **body}, format="json")


def test_context_all_returns_the_four_kinds_formatted_with_counts(tenant_a, tenant_b):
    seed(tenant_a.tenant)
    r = ask(tenant_a.client, user_id="u1", session_id="s1", episodic_limit=2)
    assert r.status_code == 200, r.json()
    body = r.json()
    assert body["errors"] == []
    assert body["counts"] == {"short_term": 2, "episodic": 2, "semantic": 2, "procedural": 1}
    assert "user: Plan my workout" in body["short_term"]["formatted"]
    episodic = [m["text"] for m in body["episodic"]["memories"]]
    assert episodic[0] == "User prefers morning workouts"
    assert "User hates mornings" not in episodic  # another user's memory
    assert "Normal resting heart rate is 60-100 bpm [health]" in body["semantic"]["formatted"]
    rec = body["procedural"]["recommendation"]
    assert rec["match"] == "exact" and rec["recommended"] is True
    assert rec["tool_sequence"] == ["calendar", "workout_planner"]
    assert "calendar -> workout_planner" in body["formatted"]

    other = ask(tenant_b.client, user_id="u1", session_id="s1").json()
    assert other["counts"] == {"short_term": 0, "episodic": 0, "semantic": 0, "procedural": 0}
    assert other["errors"] == []


def test_include_flags_leave_parts_out(tenant_a):
    seed(tenant_a.tenant)
    body = ask(
        tenant_a.client, user_id="u1", session_id="s1", include_episodic=False, include_semantic=False
    ).json()
    assert body["episodic"] is None and body["semantic"] is None
    assert body["counts"]["short_term"] == 2 and body["counts"]["procedural"] == 1


def test_one_failing_part_is_reported_and_the_others_are_returned(tenant_a, settings):
    seed(tenant_a.tenant)
    settings.PROCEDURE_RECOMMEND_THRESHOLD = "not a number"  # an invalid setting breaks procedural only
    r = ask(tenant_a.client, user_id="u1", session_id="s1")
    assert r.status_code == 200
    body = r.json()
    assert [e["part"] for e in body["errors"]] == ["procedural"]
    assert body["procedural"] is None
    assert body["counts"]["episodic"] == 3 and body["counts"]["short_term"] == 2


def test_episodic_without_a_user_is_an_error_of_that_part_only(tenant_a):
    seed(tenant_a.tenant)
    body = ask(tenant_a.client, session_id="s1").json()
    assert [(e["part"], e["code"]) for e in body["errors"]] == [("episodic", "invalid")]
    assert body["counts"]["semantic"] == 2


def test_bad_context_input_is_a_400(tenant_a):
    assert tenant_a.client.post("/api/v1/context/all", {}, format="json").status_code == 400
    assert ask(tenant_a.client, episodic_limit=0).status_code == 400


@respx.mock
def test_a_broken_embedding_provider_fails_only_the_parts_that_embed(tenant_a, settings):
    settings.EMBEDDING_PROVIDER = "openai"
    settings.EMBEDDING_MODEL = "text-embedding-3-small"
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_EMBEDDING_MAX_RETRIES = 0
    route = respx.post("https://api.openai.com/v1/embeddings").mock(
        return_value=httpx.Response(500, json={"error": {"message": "provider down"}})
    )
    t = tenant_a.tenant
    session_append(tenant=t, session_id="s1", user_id="u1", messages=[MessageInput("user", "hello")])
    ProcedureFactory(
        tenant=t,
        user_id="u1",
        pattern="weekly report",
        embedding_model="text-embedding-3-small",
        pattern_embedding=unit_vector(1),
        execution_count=3,
        avg_success_score=0.9,
    )
    r = ask(tenant_a.client, user_id="u1", session_id="s1", query="summarise my month")
    assert r.status_code == 200
    body = r.json()
    assert route.called
    failed = {e["part"] for e in body["errors"]}
    assert "procedural" in failed
    assert body["procedural"] is None
    assert body["short_term"]["count"] == 1
    for part in ("episodic", "semantic"):
        assert (part in failed) == (body[part] is None)
