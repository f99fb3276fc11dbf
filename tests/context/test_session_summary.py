"""Trimmed session messages are summarised: extractively without an LLM (the sentences that carry
facts, with their speaker), by the LLM with one; the context window per session and per agent."""

from __future__ import annotations

import httpx
import pytest
import respx

from memory_app.embeddings.tokens import count_tokens
from memory_app.extraction.summary import SaidBy, extractive_summary, sentence_score
from memory_app.models import AgentProfile, ConversationSession
from memory_app.models.agent_config import AgentProfileConfig
from tests.support.kinds_helpers import CHAT_URL, chat_response, use_llm

pytestmark = pytest.mark.django_db

CHAT = [
    ("Caroline", "Hey Mel! I went to the LGBTQ support group on 7 May and it was powerful."),
    ("Melanie", "Wow, that's great!"),
    ("Caroline", "I decided to study counseling next year. My favourite book is Becoming Nicole."),
    ("Melanie", "Lol, nice."),
    ("Melanie", "I ran a 5k charity race last Saturday in 28 minutes."),
]
FILLER = "the quick brown fox jumps over the lazy dog while the cat sleeps " * 3


def append(client, sid, messages, **body):
    response = client.post(f"/api/v1/sessions/{sid}/messages", {"messages": messages, **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def chat_then_filler(client, sid, **body):
    said = [{"role": "user", "speaker": who, "content": text} for who, text in CHAT]
    append(client, sid, said, **body)
    last = None
    for _ in range(8):
        last = append(client, sid, [{"role": "assistant", "content": FILLER}])
    return last


def test_without_an_llm_trimmed_facts_are_kept_with_their_speaker(tenant_a, settings):
    settings.LLM_MODEL = ""
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 300
    settings.SESSION_SUMMARY_MAX_TOKENS = 80
    chat_then_filler(tenant_a.client, "s1")
    session = ConversationSession.objects.get(tenant=tenant_a.tenant, session_id="s1")
    assert session.trimmed_count >= len(CHAT)
    lines = session.summary.splitlines()
    assert "Caroline: I went to the LGBTQ support group on 7 May and it was powerful." in lines
    assert "Melanie: I ran a 5k charity race last Saturday in 28 minutes." in lines
    assert not any("Lol" in line or "that's great" in line for line in lines)
    assert count_tokens(session.summary) <= 80
    body = tenant_a.client.get("/api/v1/sessions/s1").json()
    assert body["session"]["summary"] == session.summary


def test_the_append_that_trims_says_how_it_summarised(tenant_a, settings):
    settings.LLM_MODEL = ""
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 300
    said = [{"role": "user", "speaker": who, "content": text} for who, text in CHAT]
    append(tenant_a.client, "s1", said)
    results = [append(tenant_a.client, "s1", [{"role": "assistant", "content": FILLER}]) for _ in range(8)]
    trimming = [r for r in results if r["trimmed_now"]]
    assert trimming and all(r["summary_method"] == "extractive" and r["summarized"] for r in trimming)
    assert all(r["summary_method"] is None for r in results if not r["trimmed_now"])


def test_a_summary_budget_of_zero_keeps_no_summary(tenant_a, settings):
    settings.LLM_MODEL = ""
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 300
    settings.SESSION_SUMMARY_MAX_TOKENS = 0
    chat_then_filler(tenant_a.client, "s1")
    session = ConversationSession.objects.get(tenant=tenant_a.tenant, session_id="s1")
    assert session.trimmed_count > 0 and session.summary == ""


@respx.mock
def test_with_an_llm_the_summary_is_the_llms(tenant_a, settings):
    use_llm(settings)
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 300
    respx.post(CHAT_URL).mock(return_value=chat_response("Caroline studies counseling."))
    last = chat_then_filler(tenant_a.client, "s1")
    assert last["session"]["summary"] == "Caroline studies counseling."


@respx.mock
def test_a_failing_llm_falls_back_to_the_extractive_summary(tenant_a, settings):
    use_llm(settings)
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 300
    respx.post(CHAT_URL).mock(return_value=httpx.Response(500, json={"error": {"message": "down"}}))
    chat_then_filler(tenant_a.client, "s1")
    session = ConversationSession.objects.get(tenant=tenant_a.tenant, session_id="s1")
    assert "Melanie: I ran a 5k charity race last Saturday in 28 minutes." in session.summary


def test_a_session_keeps_its_own_context_window(tenant_a, settings):
    settings.LLM_MODEL = ""
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 100_000
    first = append(tenant_a.client, "small", [{"role": "user", "content": "hi"}], context_window_tokens=200)
    assert first["session"]["context_window_tokens"] == 200
    for _ in range(8):
        small = append(tenant_a.client, "small", [{"role": "assistant", "content": FILLER}])
        large = append(tenant_a.client, "large", [{"role": "assistant", "content": FILLER}])
    assert small["session"]["trimmed_count"] > 0 and small["session"]["token_count"] <= 160
    assert large["session"]["trimmed_count"] == 0
    assert large["session"]["context_window_tokens"] is None


def test_an_agent_profile_sets_the_window_of_its_sessions_and_a_session_overrides_it(tenant_a, settings):
    settings.LLM_MODEL = ""
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 100_000
    AgentProfile.objects.create(
        tenant=tenant_a.tenant, agent_id="terse", config={"session": {"context_window_tokens": 200}}
    )
    for _ in range(8):
        agent = append(tenant_a.client, "a", [{"role": "assistant", "content": FILLER}], agent_id="terse")
        own = append(
            tenant_a.client,
            "b",
            [{"role": "assistant", "content": FILLER}],
            agent_id="terse",
            context_window_tokens=100_000,
        )
    assert agent["session"]["trimmed_count"] > 0 and agent["session"]["token_count"] <= 160
    assert own["session"]["trimmed_count"] == 0


def test_another_tenants_profile_does_not_set_the_window(tenant_a, tenant_b, settings):
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 100_000
    AgentProfile.objects.create(
        tenant=tenant_b.tenant, agent_id="terse", config={"session": {"context_window_tokens": 200}}
    )
    for _ in range(8):
        body = append(tenant_a.client, "a", [{"role": "assistant", "content": FILLER}], agent_id="terse")
    assert body["session"]["trimmed_count"] == 0


@pytest.mark.parametrize("window", [99, 0, "big", 10_000_001])
def test_a_bad_window_is_a_400_and_stores_nothing(tenant_a, window):
    response = tenant_a.client.post(
        "/api/v1/sessions/s1/messages",
        {"role": "user", "content": "hi", "context_window_tokens": window},
        format="json",
    )
    assert response.status_code == 400
    assert "context_window_tokens" in response.json()["error"]["fields"]
    assert not ConversationSession.objects.filter(tenant=tenant_a.tenant).exists()


def test_the_profile_config_validates_the_session_window():
    assert AgentProfileConfig.errors({"session": {"context_window_tokens": 500}}) == []
    assert AgentProfileConfig.errors({"session": {"context_window_tokens": 5}}) == [
        "session.context_window_tokens: must be a whole number from 100 to 10000000"
    ]
    assert AgentProfileConfig.errors({"session": {"window": 500}}) == ["session.window: unknown key"]
    assert (
        AgentProfileConfig.parse({"session": {"context_window_tokens": 500}}).session.context_window_tokens
        == 500
    )


def test_small_talk_and_chat_score_nothing_and_facts_score():
    assert sentence_score("Thanks so much!") == 0
    assert sentence_score("That sounds lovely, really.") == 0
    assert sentence_score("I moved to Lisbon in 2019.") > sentence_score("I like tea.") > 0


def test_the_summary_keeps_the_best_sentences_in_the_order_they_were_said():
    said = [SaidBy(who, text) for who, text in CHAT]
    summary = extractive_summary(previous="", messages=said, max_tokens=40, count=count_tokens)
    # the two richest sentences fit; the decision and the book (fewer facts each) do not
    assert summary.splitlines() == [
        "Caroline: I went to the LGBTQ support group on 7 May and it was powerful.",
        "Melanie: I ran a 5k charity race last Saturday in 28 minutes.",
    ]
    assert count_tokens(summary) <= 40


def test_the_running_summary_gives_way_only_to_better_sentences():
    previous = "Caroline: I moved to Lisbon in 2019 with my partner Ana."
    said = [SaidBy("Melanie", "I like tea a lot.")]
    summary = extractive_summary(previous=previous, messages=said, max_tokens=20, count=count_tokens)
    assert summary == previous
