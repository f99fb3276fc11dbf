from __future__ import annotations

import httpx
import pytest
import respx

from memory_app.models import ConversationSession, Memory, Procedure
from tests.support.kinds_helpers import CHAT_URL, chat_response, use_llm

pytestmark = pytest.mark.django_db


def turn(client, **body):
    base = {
        "session_id": "s1",
        "user_id": "u1",
        "user_message": "I love hiking in the mountains. Can you plan a trip?",
        "assistant_message": "Sure! How about the Alps in June?",
    }
    return client.post("/api/v1/interactions", {**base, **body}, format="json")


def test_an_interaction_fills_short_term_episodic_and_procedural_memory(tenant_a, tenant_b):
    r = turn(
        tenant_a.client,
        tool_sequence=["maps", "weather"],
        execution_time_ms=250,
        success_score=0.8,
        query="plan a hiking trip",
    )
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body["extraction_method"] == "rules"
    # what was said is kept, and the statement the rules are sure of is extracted beside it (the
    # write path may fold the statement into the message that holds it)
    said, fact = body["memories"]
    assert (said["text"], said["outcome"]) == (
        "User: I love hiking in the mountains. Can you plan a trip?",
        "created",
    )
    assert fact["text"] == "User loves hiking in the mountains"
    memory = Memory.objects.get(pk=said["memory_id"])
    assert (memory.user_id, memory.session_id, memory.kind, memory.event_type) == (
        "u1",
        "s1",
        "episodic",
        "message",
    )
    assert memory.context == "Assistant: Sure! How about the Alps in June?"  # the reply is context only
    assert memory.metadata["source_message_ids"] == ["s1#0"]
    assert memory.embedding is not None
    session = ConversationSession.objects.get(tenant=tenant_a.tenant, session_id="s1")
    assert [m.role for m in session.messages.all()] == ["user", "assistant"]
    assert body["procedure"]["pattern"] == "plan a hiking trip"
    assert body["procedure"]["tool_sequence"] == ["maps", "weather"]

    # the same statement again is deduplicated by the write path, not stored twice
    active = Memory.objects.filter(tenant=tenant_a.tenant, status="active").count()
    again = turn(tenant_a.client).json()
    assert again["memories"][0]["outcome"] == "duplicate_of"
    assert {m["outcome"] for m in again["memories"]} <= {"duplicate_of", "merged_into"}
    assert Memory.objects.filter(tenant=tenant_a.tenant, status="active").count() == active

    assert not Memory.objects.filter(tenant=tenant_b.tenant).exists()
    assert tenant_b.client.get("/api/v1/sessions/s1").status_code == 404


def test_without_a_user_nothing_is_extracted_but_the_turn_is_kept(tenant_a):
    body = turn(tenant_a.client, user_id="").json()
    assert body["memories"] == []
    assert body["warnings"]
    assert body["session"]["token_count"] > 0
    assert not Memory.objects.exists()


def test_bad_interaction_input_is_a_400_and_stores_nothing(tenant_a):
    assert turn(tenant_a.client, user_message="").status_code == 400
    r = turn(tenant_a.client, tool_sequence=["x"])
    assert r.status_code == 400
    assert "success_score" in r.json()["error"]["fields"]
    assert turn(tenant_a.client, success_score=2).status_code == 400
    assert not ConversationSession.objects.exists() and not Procedure.objects.exists()


@respx.mock
def test_with_an_llm_the_extracted_memories_carry_its_topics_and_entities(tenant_a, settings):
    use_llm(settings)
    respx.post(CHAT_URL).mock(
        return_value=chat_response(
            {
                "memories": [
                    {
                        "text": "User loves hiking in the Alps",
                        "about": "User",
                        "source_message_ids": ["s1#0"],
                        "kind": "episodic",
                        "type": "preference",
                        "topics": ["fitness", "travel"],
                        "entities": ["Alps"],
                        "confidence": 0.9,
                    }
                ]
            }
        )
    )
    body = turn(tenant_a.client).json()
    assert body["extraction_method"] == "llm"
    memory = Memory.objects.get(pk=body["memories"][-1]["memory_id"])
    assert memory.topics == ["fitness", "travel"] and memory.entities == ["Alps"]
    assert memory.metadata["extracted_by"] == "llm"


@respx.mock
def test_a_failing_llm_falls_back_to_the_rules_and_says_so(tenant_a, settings):
    use_llm(settings)
    respx.post(CHAT_URL).mock(return_value=httpx.Response(503, json={"error": {"message": "busy"}}))
    body = turn(tenant_a.client).json()
    assert body["extraction_method"] == "rules"
    assert any("LLM extraction failed" in w for w in body["warnings"])
    assert [m["text"] for m in body["memories"]][1] == "User loves hiking in the mountains"
