from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import respx

from memory_app.models import Memory
from tests.support.kinds_helpers import CHAT_URL, chat_response, use_llm

pytestmark = pytest.mark.django_db
RECORDED = json.loads((Path(__file__).parents[1] / "data" / "llm_conversation_extraction.json").read_text())
CHAT = [
    {
        "role": "user",
        "speaker": "Caroline",
        "content": "I went to a LGBTQ support group yesterday and it was so powerful.",
        "timestamp": "2023-05-08T13:56:00Z",
        "message_id": "D1:1",
    },
    {
        "role": "user",
        "speaker": "Melanie",
        "content": "Thanks!",
        "timestamp": "2023-05-08T13:57:00Z",
        "message_id": "D1:2",
    },
    {
        "role": "user",
        "speaker": "Melanie",
        "content": "My daughter Mia just turned 7 last week!",
        "timestamp": "2023-05-08T13:58:00Z",
        "message_id": "D1:3",
    },
]


def post(client):
    body = {
        "session_id": "c1",
        "user_id": "u-caroline",
        "speakers": {"Melanie": "u-melanie"},
        "messages": CHAT,
        "extraction": "llm",
    }
    return client.post("/api/v1/interactions", body, format="json")


@respx.mock
def test_one_llm_call_gives_facts_about_the_right_speaker_with_resolved_dates(tenant_a, settings):
    use_llm(settings)
    route = respx.post(CHAT_URL).mock(return_value=chat_response(RECORDED))
    body = post(tenant_a.client).json()
    assert route.call_count == 1
    prompt = json.loads(route.calls[0].request.content)["messages"][1]["content"]
    assert "[D1:3] (2023-05-08) Melanie: My daughter Mia just turned 7 last week!" in prompt
    assert body["extraction_method"] == "llm" and body["warnings"] == []
    facts = {m["text"]: m for m in body["memories"] if m["event_type"] != "message"}
    # a speaker who is not in the conversation, a source that is not a new message and an item
    # without text are dropped, not guessed at
    assert set(facts) == {
        "Caroline went to a LGBTQ support group on 7 May 2023",
        "Melanie's daughter Mia turned 7",
    }
    mia = facts["Melanie's daughter Mia turned 7"]
    assert (mia["user_id"], mia["about"], mia["source_message_ids"]) == ("u-melanie", "Melanie", ["D1:3"])
    assert mia["event_date"].startswith("2023-05-01")
    row = Memory.objects.get(pk=mia["memory_id"])
    assert row.metadata["extracted_by"] == "llm" and set(row.entities) == {"Melanie", "Mia"}
    # what was said is kept as well (the small talk is not)
    said = [m["text"] for m in body["memories"] if m["event_type"] == "message"]
    assert said == [
        "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
        "Melanie: My daughter Mia just turned 7 last week!",
    ]


@respx.mock
@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(500, json={"error": {"message": "down"}}),
        httpx.Response(200, json={"choices": []}),
    ],
)
def test_any_llm_failure_falls_back_to_the_offline_extraction(tenant_a, settings, response):
    use_llm(settings)
    respx.post(CHAT_URL).mock(return_value=response)
    body = post(tenant_a.client).json()
    assert body["extraction_method"] == "rules"
    assert any("LLM extraction failed" in w for w in body["warnings"])
    assert "Caroline: I went to a LGBTQ support group yesterday and it was so powerful." in [
        m["text"] for m in body["memories"]
    ]


@respx.mock
def test_an_answer_that_is_not_json_falls_back_too(tenant_a, settings):
    use_llm(settings)
    respx.post(CHAT_URL).mock(return_value=chat_response("Sure! Here are the memories: ..."))
    body = post(tenant_a.client).json()
    assert body["extraction_method"] == "rules" and body["memories"]
