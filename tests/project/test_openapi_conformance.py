"""The OpenAPI schema tells the truth: it validates without warnings, and the real response of every
operation (success and the errors that occur) matches it exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from memory_app.models import MemoryChange
from tests.support.openapi_check import Conformance, body_errors, openapi_schema, operations

pytestmark = pytest.mark.django_db


def test_schema_generation_validates_without_a_single_warning(tmp_path):
    # Warnings include component-name collisions, which silently make one component stand for two.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert (tmp_path / "schema.yaml").stat().st_size > 10_000


class Checked:
    """An APIClient whose every response is checked against the schema."""

    def __init__(self, client: APIClient, conformance: Conformance) -> None:
        self.client, self.conformance = client, conformance

    def __call__(self, method: str, path: str, body: Any = None, *, expect: int, **query: Any) -> Any:
        call = getattr(self.client, method.lower())
        if isinstance(body, bytes):  # a JSONL body (the import)
            response = self.client.generic(method, path, body, content_type="application/x-ndjson")
        elif body is not None:
            response = call(path, body, format="json")
        else:
            response = call(path, query or None)
        content = b"".join(response.streaming_content) if response.streaming else response.content
        assert response.status_code == expect, (method, path, response.status_code, content[:500])
        self.conformance.check(method, path, response.status_code, content, response.get("Content-Type"))
        if response.get("Content-Type", "").startswith("application/x-ndjson"):
            return [json.loads(line) for line in content.decode().splitlines()]
        return json.loads(content) if content else None


@pytest.fixture
def conformance() -> Conformance:
    return Conformance(openapi_schema())


def test_every_operation_answers_exactly_what_the_schema_says(tenant_a, tenant_b, conformance, settings):
    a = Checked(tenant_a.client, conformance)
    b = Checked(tenant_b.client, conformance)
    anon = Checked(APIClient(), conformance)

    # store: one, a batch, an exact duplicate (200), a changed value (supersede), bad input
    one = a("POST", "/api/v1/memories", {"text": "User's BMI goal is 23", "user_id": "u1"}, expect=201)
    a(
        "POST",
        "/api/v1/memories",
        [{"text": "User is vegan", "user_id": "u1"}, {"text": "Dogs are mammals", "kind": "semantic"}],
        expect=201,
    )
    a("POST", "/api/v1/memories", {"text": "User's BMI goal is 23", "user_id": "u1"}, expect=200)
    update = a("POST", "/api/v1/memories", {"text": "User's BMI goal is 24", "user_id": "u1"}, expect=201)
    a("POST", "/api/v1/memories", {"text": ""}, expect=400)
    anon("POST", "/api/v1/memories", {"text": "x"}, expect=401)

    # list: pages, the next page, a bad cursor, a bad filter
    page = a("GET", "/api/v1/memories", expect=200, page_size=1, status="any")
    assert page["next"] and len(page["results"]) == 1
    a("GET", page["next"].split("testserver", 1)[1], expect=200)
    a("GET", "/api/v1/memories", expect=404, cursor="not-a-cursor")
    a("GET", "/api/v1/memories", expect=400, kind="nope")
    anon("GET", "/api/v1/memories", expect=401)

    # detail, edit, feedback, lineage, undo, delete
    memory_id = one["memory_id"]
    newest = update["memory_id"]
    a("GET", f"/api/v1/memories/{newest}", expect=200)
    b("GET", f"/api/v1/memories/{newest}", expect=404)
    a("PATCH", f"/api/v1/memories/{newest}", {"topics": ["health"]}, expect=200)
    a("PATCH", f"/api/v1/memories/{newest}", {"confidence": 7}, expect=400)
    a("POST", f"/api/v1/memories/{newest}/feedback", {"signal": "helpful"}, expect=200)
    a("POST", f"/api/v1/memories/{newest}/feedback", {"signal": "meh"}, expect=400)
    b("POST", f"/api/v1/memories/{newest}/feedback", {"signal": "helpful"}, expect=404)
    a("GET", f"/api/v1/memories/{memory_id}/lineage", expect=200)
    b("GET", f"/api/v1/memories/{memory_id}/lineage", expect=404)
    change = MemoryChange.objects.filter(tenant=tenant_a.tenant).latest("id")
    a("POST", f"/api/v1/merges/{change.pk}/undo", expect=200)
    a("POST", f"/api/v1/merges/{change.pk}/undo", expect=409)
    b("POST", f"/api/v1/merges/{change.pk}/undo", expect=404)
    a("DELETE", f"/api/v1/memories/{newest}", expect=204)
    a("PATCH", f"/api/v1/memories/{newest}", {"topics": ["x"]}, expect=409)
    b("DELETE", f"/api/v1/memories/{newest}", expect=404)
    a("DELETE", f"/api/v1/memories/{newest}?purge=maybe", expect=400)
    a("DELETE", f"/api/v1/memories/{newest}?purge=true", expect=204)
    a("DELETE", f"/api/v1/memories/{newest}?purge=true", expect=404)

    # retrieval
    hits = a(
        "POST", "/api/v1/memories/search", {"query": "BMI goal", "filters": {"user_id": "u1"}}, expect=200
    )
    assert hits["results"]
    a("POST", "/api/v1/memories/search", {"query": "BMI goal", "user_id": "u1"}, expect=200)
    a("POST", "/api/v1/memories/search", {"query": "BMI goal"}, expect=400)
    a("POST", "/api/v1/memories/search", {"query": "BMI", "mode": "psychic"}, expect=400)
    timed = a(
        "POST",
        "/api/v1/memories/search",
        {"query": "BMI goal in May", "user_id": "u1", "now": "2023-10-22T12:00:00Z", "query_time": "boost"},
        expect=200,
    )
    assert timed["time_window"]["applied"] == "boost"
    a("POST", "/api/v1/memories/search", {"query": "BMI", "query_time": "always"}, expect=400)
    a(
        "POST",
        "/api/v1/context",
        {"query": "diet", "max_tokens": 50, "filters": {"user_id": "u1"}},
        expect=200,
    )
    a("POST", "/api/v1/context", {"user_turns": 0}, expect=400)
    a(
        "POST",
        "/api/v1/context/all",
        {"query": "what do I eat?", "user_id": "u1", "session_id": "s1", "max_tokens": 200},
        expect=200,
    )
    a(
        "POST",
        "/api/v1/context/all",
        {"query": "what did I eat yesterday?", "user_id": "u1", "query_time": "filter"},
        expect=200,
    )
    a(
        "POST",
        "/api/v1/context",
        {"query": "diet last week", "user_id": "u1", "now": "2023-10-22T12:00:00Z"},
        expect=200,
    )
    a("POST", "/api/v1/context/all", {}, expect=400)

    # conversation, sessions, procedures
    turn = {
        "session_id": "s1",
        "user_id": "u1",
        "user_message": "I love hiking.",
        "assistant_message": "Nice!",
    }
    a("POST", "/api/v1/interactions", turn, expect=201)
    a("POST", "/api/v1/interactions", {"session_id": "s1"}, expect=400)
    chat = {
        "session_id": "s3",
        "user_id": "u1",
        "messages": [
            {"role": "user", "speaker": "Caroline", "content": "I adopted a cat.", "message_id": "m1"},
            {"role": "user", "speaker": "Melanie", "content": "I play the violin.", "message_id": "m2"},
        ],
        "speakers": {"Caroline": "u1", "Melanie": "u2"},
        "extraction": "rules",
    }
    a("POST", "/api/v1/interactions", chat, expect=201)
    a(
        "POST",
        "/api/v1/interactions/batch",
        {"interactions": [turn, {**chat, "session_id": "s4"}]},
        expect=201,
    )
    a("POST", "/api/v1/interactions/batch", {"interactions": [{"session_id": "s1"}]}, expect=400)
    anon("POST", "/api/v1/interactions/batch", {"interactions": [turn]}, expect=401)
    a("POST", "/api/v1/sessions/s2/messages", {"role": "user", "content": "hello"}, expect=201)
    # a session of its own small window: the trim's extractive summary
    said = [{"role": "user", "speaker": "Ana", "content": f"I moved to Oslo in 201{i}."} for i in range(9)]
    trimmed = a(
        "POST", "/api/v1/sessions/s5/messages", {"messages": said, "context_window_tokens": 100}, expect=201
    )
    assert trimmed["summary_method"] == "extractive"
    a(
        "POST",
        "/api/v1/sessions/s5/messages",
        {"role": "user", "content": "x", "context_window_tokens": 5},
        expect=400,
    )
    a("POST", "/api/v1/sessions/s2/messages", {"role": "robot", "content": "hello"}, expect=400)
    a("GET", "/api/v1/sessions/s2", expect=200, limit=10)
    b("GET", "/api/v1/sessions/s2", expect=404)
    a("DELETE", "/api/v1/sessions/s2", expect=200)
    a("DELETE", "/api/v1/sessions/s2", expect=404)
    record = {
        "query": "weekly summary",
        "tool_sequence": ["aggregate"],
        "execution_time_ms": 5,
        "success_score": 1,
    }
    a("POST", "/api/v1/procedures/record", record, expect=200)
    a("POST", "/api/v1/procedures/record", {"query": "weekly summary"}, expect=400)
    a("POST", "/api/v1/procedures/suggest", {"query": "weekly summary"}, expect=200)
    a("POST", "/api/v1/procedures/suggest", {}, expect=400)

    # agent profiles
    profile = {"agent_id": "coach", "name": "Coach", "config": {"search": {"mmr": True}}}
    a("POST", "/api/v1/agent-profiles", profile, expect=201)
    a("POST", "/api/v1/agent-profiles", profile, expect=409)
    a("POST", "/api/v1/agent-profiles", {"agent_id": "x", "config": {"mmr": 2}}, expect=400)
    a("GET", "/api/v1/agent-profiles", expect=200, page_size=1)
    b("GET", "/api/v1/agent-profiles/coach", expect=404)
    a("GET", "/api/v1/agent-profiles/coach", expect=200)
    a("PATCH", "/api/v1/agent-profiles/coach", {"name": "Head coach"}, expect=200)
    a("PATCH", "/api/v1/agent-profiles/coach", {"config": {"judge": "gpt"}}, expect=400)
    b("PATCH", "/api/v1/agent-profiles/coach", {"name": "x"}, expect=404)
    b("DELETE", "/api/v1/agent-profiles/coach", expect=404)
    a("DELETE", "/api/v1/agent-profiles/coach", expect=204)
    anon("GET", "/api/v1/agent-profiles", expect=401)

    # a whole tenant: export (JSONL, streamed), import into another tenant (dry run, then applied)
    records = a("GET", "/api/v1/export", expect=200)
    assert {r["type"] for r in records} >= {"header", "memory", "change", "session", "procedure"}
    jsonl = "".join(json.dumps(r) + "\n" for r in records).encode()
    b("POST", "/api/v1/import", jsonl, expect=200)
    b("POST", "/api/v1/import?apply=true", jsonl, expect=200)
    b("POST", "/api/v1/import?apply=true", b"{broken\n", expect=400)
    anon("GET", "/api/v1/export", expect=401)

    # stats, health, forgetting a user
    a("GET", "/api/v1/stats", expect=200, user_id="u1")
    a("GET", "/api/v1/stats/embeddings", expect=200)
    anon("GET", "/api/v1/stats", expect=401)
    health = Checked(APIClient(), conformance)
    health("GET", "/api/v1/health", expect=200)
    a("GET", "/api/v1/health/ready", expect=200)
    anon("GET", "/api/v1/health/ready", expect=401)
    a("DELETE", "/api/v1/users/u1/memories", expect=200, episodic="true")
    a("DELETE", "/api/v1/users/u1/memories?episodic=maybe", expect=400)

    # quotas: a store past the tenant's memories, a key past its request rate
    settings.QUOTA_MAX_MEMORIES = 1
    a("POST", "/api/v1/memories", {"text": "User keeps bees", "user_id": "u1"}, expect=403)
    settings.QUOTA_REQUESTS_PER_MINUTE = 1
    b("GET", "/api/v1/stats", expect=200)
    b("GET", "/api/v1/stats", expect=429)

    missing = operations(conformance.schema) - conformance.covered()
    assert not missing, f"operations never checked against a live response: {sorted(missing)}"


SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "note": {"type": "string", "nullable": True}},
}


def test_the_check_fails_on_a_field_the_schema_lacks_or_one_the_view_leaves_out():
    schema = openapi_schema()
    assert body_errors(schema, SCHEMA, {"id": 1, "note": None}) == []
    assert body_errors(schema, SCHEMA, {"id": 1, "note": "x", "extra": 2})  # undocumented field
    assert body_errors(schema, SCHEMA, {"id": 1})  # documented field missing
    memory = {"$ref": "#/components/schemas/MemoryOutput"}
    assert any("supersedes" in e for e in body_errors(schema, memory, {"id": 1}))


def test_every_example_in_the_schema_is_valid_for_its_own_schema():
    # answers strictly (every field, nothing more), requests as the API reads them
    schema = openapi_schema()
    checked = 0
    for item in schema["paths"].values():
        for operation in item.values():
            bodies = [(operation.get("requestBody", {}).get("content", {}).get("application/json"), False)]
            bodies += [
                (r.get("content", {}).get("application/json"), True) for r in operation["responses"].values()
            ]
            for media, strict in bodies:
                for name, example in (media or {}).get("examples", {}).items():
                    errors = body_errors(schema, media["schema"], example["value"], strict=strict)
                    assert not errors, (name, errors)
                    checked += 1
    assert checked >= 60
