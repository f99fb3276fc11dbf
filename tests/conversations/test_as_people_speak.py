"""Conversations as people speak: dates that look ahead, questions and small talk kept short-term,
calendar words that are no entities, the clean fact kept over its raw message, sessions that keep
who said what."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_app.extraction.conversation import names_in
from memory_app.extraction.dates import resolve_event_date
from memory_app.extraction.rules import entities_of
from memory_app.extraction.smalltalk import states_nothing
from memory_app.judge.merge import fact_stands_for_message
from memory_app.models import Memory

pytestmark = pytest.mark.django_db
SAID = datetime(2026, 5, 12, 15, 0, tzinfo=UTC)


def interact(client, messages, **body):
    payload = {"session_id": "s1", "user_id": "u1", "messages": messages, "extraction": "rules", **body}
    response = client.post("/api/v1/interactions", payload, format="json")
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("see you on Friday June 5th!", datetime(2026, 6, 5, tzinfo=UTC)),
        ("We'll meet on Friday.", datetime(2026, 5, 15, tzinfo=UTC)),
        ("We met on June 5th.", datetime(2025, 6, 5, tzinfo=UTC)),
        ("I went there on Friday.", datetime(2026, 5, 8, tzinfo=UTC)),
    ],
)
def test_a_date_without_a_year_is_the_next_one_when_the_words_look_ahead_else_the_last(text, day):
    found = resolve_event_date(text, SAID)
    assert found is not None
    assert found.when == day


def test_see_you_on_friday_june_5th_said_in_may_is_dated_june_5th_of_that_year(tenant_a):
    message = {
        "role": "user",
        "speaker": "Ana",
        "content": "see you on Friday June 5th!",
        "timestamp": "2026-05-12T15:00:00Z",
    }
    body = interact(tenant_a.client, [message])
    [memory] = body["memories"]
    assert memory["event_date"].startswith("2026-06-05")


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("What should I cook tonight?", True),
        ("Wow! Did you go to the park?", True),
        ("Thanks!", True),
        ("I went to the park. Did you?", False),
        ("How was it? I loved the movie.", False),
    ],
)
def test_questions_and_small_talk_state_nothing(text, asks):
    assert states_nothing(text) is asks


def test_a_question_stays_in_the_session_and_is_not_stored_long_term(tenant_a):
    body = interact(tenant_a.client, [{"role": "user", "content": "What should I cook tonight?"}])
    assert body["memories"] == []
    assert not Memory.objects.filter(tenant=tenant_a.tenant).exists()
    session = tenant_a.client.get("/api/v1/sessions/s1").json()
    assert [m["content"] for m in session["messages"]] == ["What should I cook tonight?"]


def test_weekday_and_month_names_are_not_entities():
    assert names_in("See you on Friday June 5th with Mia in Paris") == ("Mia", "Paris")
    assert entities_of("I met Mia on Monday in October") == ("Mia",)


def test_a_clean_fact_stands_for_its_message_only_when_it_states_everything_the_message_does():
    message = "Hana: I love hiking in the mountains. Can you plan a trip?"
    assert fact_stands_for_message("Hana loves hiking in the mountains", message)
    assert not fact_stands_for_message("Hana loves hiking", message)
    assert not fact_stands_for_message("Hana loves hiking in the mountains", message + " I live in Oslo.")


def test_when_a_fact_merges_with_its_message_the_clean_fact_survives(tenant_a):
    message = {"role": "user", "content": "I love hiking in the mountains. Can you plan a trip?"}
    body = interact(tenant_a.client, [message])
    active = list(
        Memory.objects.filter(tenant=tenant_a.tenant, status="active").values_list("text", flat=True)
    )
    assert "User loves hiking in the mountains" in active
    merged = [m for m in body["memories"] if m["outcome"] == "merged_into"]
    if merged:  # folded into one memory: the clean words are the ones kept
        assert active == ["User loves hiking in the mountains"]


def test_a_session_returns_each_messages_speaker_id_and_time(tenant_a, tenant_b):
    messages = [
        {
            "role": "user",
            "speaker": "Caroline",
            "content": "I went to a support group yesterday.",
            "timestamp": "2023-05-08T13:56:00Z",
            "message_id": "D1:3",
        },
        {
            "role": "user",
            "speaker": "Melanie",
            "content": "My daughter Mia just turned 7 last week.",
            "timestamp": "2023-05-08T13:57:00Z",
            "message_id": "D1:4",
        },
    ]
    interact(tenant_a.client, messages, speakers={"Caroline": "u1", "Melanie": "u2"})
    session = tenant_a.client.get("/api/v1/sessions/s1").json()
    got = [(m["speaker"], m["message_id"], m["timestamp"]) for m in session["messages"]]
    assert got == [
        ("Caroline", "D1:3", "2023-05-08T13:56:00Z"),
        ("Melanie", "D1:4", "2023-05-08T13:57:00Z"),
    ]
    assert tenant_b.client.get("/api/v1/sessions/s1").status_code == 404
