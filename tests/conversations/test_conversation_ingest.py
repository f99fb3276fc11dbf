from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_app.api.errors import flatten_errors
from memory_app.models import ConversationSession, Memory, SessionMessage

pytestmark = pytest.mark.django_db

T0 = "2023-05-08T13:56:00Z"


def message(speaker: str, content: str, mid: str, timestamp: str = T0) -> dict:
    return {"role": "user", "speaker": speaker, "content": content, "timestamp": timestamp, "message_id": mid}


CHAT = [
    message("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful.", "D1:1"),
    message("Melanie", "Wow, that's great!", "D1:2"),
    message("Melanie", "I love painting with my kids. We went camping last Saturday.", "D1:3"),
    message("Caroline", "Your kids are so lucky to have you.", "D1:4"),
]


def post(client, **body):
    base = {"session_id": "chat-1", "user_id": "u-caroline", "messages": CHAT}
    return client.post("/api/v1/interactions", {**base, **body}, format="json")


def test_each_speaker_mapped_to_a_user_gets_the_memories_about_them(tenant_a, tenant_b):
    r = post(tenant_a.client, speakers={"Caroline": "u-caroline", "Melanie": "u-melanie"})
    assert r.status_code == 201, r.json()
    stored = r.json()["memories"]
    by_text = {m["text"]: m for m in stored}
    said = by_text["Caroline: I went to a LGBTQ support group yesterday and it was so powerful."]
    assert (said["user_id"], said["about"], said["source_message_ids"]) == (
        "u-caroline",
        "Caroline",
        ["D1:1"],
    )
    assert said["event_date"].startswith("2023-05-07")  # "yesterday" against the message's timestamp
    assert by_text["Melanie loves painting with their kids"]["user_id"] == "u-melanie"
    # second person is about the person addressed
    assert by_text["Melanie's kids are so lucky to have you"]["user_id"] == "u-melanie"
    assert by_text["Melanie's kids are so lucky to have you"]["source_message_ids"] == ["D1:4"]
    # small talk stays in the session but is no long-term memory
    assert not any("that's great" in m["text"] for m in stored)

    row = Memory.objects.get(pk=said["memory_id"])
    assert "Caroline" in row.entities
    assert row.metadata["source_message_ids"] == ["D1:1"] and row.metadata["date_expression"] == "yesterday"
    assert row.context.startswith("Melanie: Wow, that's great!")
    camping = Memory.objects.get(text__startswith="Melanie: I love painting", status="active")
    assert camping.event_date.date().isoformat() == "2023-05-06"  # last Saturday before Monday 8 May
    assert camping.user_id == "u-melanie"

    session = ConversationSession.objects.get(tenant=tenant_a.tenant, session_id="chat-1")
    assert [(m.speaker, m.client_message_id) for m in session.messages.all()] == [
        ("Caroline", "D1:1"),
        ("Melanie", "D1:2"),
        ("Melanie", "D1:3"),
        ("Caroline", "D1:4"),
    ]
    assert not Memory.objects.filter(tenant=tenant_b.tenant).exists()


def test_unmapped_speakers_stay_entities_of_the_one_user(tenant_a):
    body = post(tenant_a.client).json()
    assert {m["user_id"] for m in body["memories"]} == {"u-caroline"}
    melanie = Memory.objects.filter(tenant=tenant_a.tenant, entities__contains=["Melanie"])
    assert melanie.exists() and set(melanie.values_list("user_id", flat=True)) == {"u-caroline"}


def test_the_next_call_sees_the_previous_messages_as_context(tenant_a):
    post(tenant_a.client)
    later = [message("Melanie", "The camping trip was at the beach near Portland.", "D1:5")]
    body = post(tenant_a.client, messages=later).json()
    row = Memory.objects.get(pk=body["memories"][0]["memory_id"])
    assert row.context == (
        "Melanie: I love painting with my kids. We went camping last Saturday.\n"
        "Caroline: Your kids are so lucky to have you."
    )


def test_a_message_without_timestamp_or_id_is_dated_now_and_known_by_its_position(tenant_a):
    body = post(
        tenant_a.client, messages=[{"role": "user", "speaker": "Ann", "content": "I adopted a cat today"}]
    )
    said = body.json()["memories"][0]
    assert said["source_message_ids"] == ["chat-1#0"]
    assert datetime.fromisoformat(said["event_date"]).date() == datetime.now(UTC).date()


def test_a_history_is_imported_in_one_batch(tenant_a):
    second = [message("Caroline", "I started a pottery class two weeks ago.", "D2:1", "2023-06-01T10:00:00Z")]
    r = tenant_a.client.post(
        "/api/v1/interactions/batch",
        {
            "interactions": [
                {"session_id": "s1", "user_id": "u1", "messages": CHAT},
                {"session_id": "s2", "user_id": "u1", "messages": second},
            ]
        },
        format="json",
    )
    assert r.status_code == 201, r.json()
    results = r.json()["results"]
    assert [res["session"]["session_id"] for res in results] == ["s1", "s2"]
    # the message as said, or the clean fact drawn from it when the two were merged
    pottery = Memory.objects.get(text__contains="pottery class", status="active")
    assert pottery.event_date.date().isoformat() == "2023-05-18"
    assert SessionMessage.objects.filter(session__tenant=tenant_a.tenant).count() == 5


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"messages": [{**CHAT[0], "role": "narrator"}]}, "messages.0.role"),
        ({"messages": [{**CHAT[0], "content": "   "}]}, "messages.0.content"),
        ({"messages": [{**CHAT[0], "timestamp": "last tuesday"}]}, "messages.0.timestamp"),
        ({"messages": [{**CHAT[0], "mood": "happy"}]}, "messages.0.mood"),
        ({"messages": [CHAT[0], CHAT[0]]}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": "hello"}, "messages"),
        ({"user_message": "hi"}, "messages"),  # both shapes at once
        ({"speakers": {"Caroline": ""}}, "speakers.Caroline"),
        ({"speakers": {" ": "u1"}}, "speakers"),
        ({"speakers": ["Caroline"]}, "speakers"),
        ({"extraction": "magic"}, "extraction"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_conversation_input_is_a_400_naming_the_field_and_stores_nothing(tenant_a, body, field):
    r = post(tenant_a.client, **body)
    assert r.status_code == 400, r.json()
    assert field in flatten_errors(r.json()["error"]["fields"]), r.json()
    assert not ConversationSession.objects.exists() and not Memory.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"interactions": []}, "interactions"),
        ({"interactions": [{"session_id": "s1"}]}, "interactions.0.messages"),
        ({"interactions": [{"session_id": "s1", "user_message": "hi", "x": 1}]}, "interactions.0.x"),
        ({"interactions": [], "extra": True}, "extra"),
    ],
)
def test_bad_batch_input_is_a_400_naming_the_field(tenant_a, body, field):
    r = tenant_a.client.post("/api/v1/interactions/batch", body, format="json")
    assert r.status_code == 400, r.json()
    assert field in flatten_errors(r.json()["error"]["fields"]), r.json()
    assert not ConversationSession.objects.exists()


def test_a_batch_larger_than_the_limit_is_refused(tenant_a):
    from django.conf import settings

    one = {"session_id": "s", "user_message": "hi"}
    r = tenant_a.client.post(
        "/api/v1/interactions/batch",
        {"interactions": [one] * (settings.INTERACTIONS_BATCH_MAX + 1)},
        format="json",
    )
    assert r.status_code == 400 and "interactions" in r.json()["error"]["fields"]
    assert not ConversationSession.objects.exists()


def test_the_new_fields_are_in_the_openapi_schema_with_examples(anon_client):
    schema = anon_client.get("/api/schema/?format=json")
    assert schema.status_code == 200
    text = schema.content.decode()
    for name in ("message_id", "speakers", "source_message_ids", "max_tokens", "InteractionBatchInput"):
        assert name in text
    for example in ("a multi-party conversation", "two sessions of a history", "a budgeted turn"):
        assert example in text


def test_two_messages_are_two_events_and_only_an_identical_text_is_the_same_memory(tenant_a):
    said = [
        message("Ana", "I went to the gym this morning with my sister.", "a1", "2023-05-08T08:00:00Z"),
        message("Ana", "I went to the gym this morning with my brother.", "a2", "2023-05-09T08:00:00Z"),
        message("Ana", "I went to the gym this morning with my sister.", "a3", "2023-05-10T08:00:00Z"),
    ]
    body = post(tenant_a.client, messages=said).json()
    kept = [m for m in body["memories"] if m["event_type"] == "message"]
    assert [m["outcome"] for m in kept] == ["created", "created", "duplicate_of"]
    assert kept[2]["memory_id"] == kept[0]["memory_id"]
    assert Memory.objects.filter(tenant=tenant_a.tenant, status="active", event_type="message").count() == 2
