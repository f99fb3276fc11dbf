from __future__ import annotations

import threading

import httpx
import pytest
import respx
from django.db import connection

from memory_app.embeddings.tokens import count_tokens
from memory_app.models import ConversationSession, SessionMessage
from memory_app.services.kinds.sessions import MessageInput, session_append, session_budget
from tests.support.kinds_helpers import CHAT_URL, chat_response, use_llm

pytestmark = pytest.mark.django_db

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "the",
    "cat",
    "sleeps",
]


def sentence(n: int, seed: int = 0) -> str:
    return " ".join(WORDS[(i + seed) % len(WORDS)] for i in range(n))


def post(client, sid, body):
    return client.post(f"/api/v1/sessions/{sid}/messages", body, format="json")


def test_messages_append_one_or_many_and_read_back_newest_last(tenant_a, tenant_b):
    r = post(tenant_a.client, "s1", {"role": "user", "content": "Hello there", "user_id": "u1"})
    assert r.status_code == 201, r.json()
    assert r.json()["appended"][0]["position"] == 0
    many = [{"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "Plan my week"}]
    r = post(tenant_a.client, "s1", {"messages": many})
    assert r.status_code == 201
    assert [m["position"] for m in r.json()["appended"]] == [1, 2]

    body = tenant_a.client.get("/api/v1/sessions/s1").json()
    assert [m["content"] for m in body["messages"]] == ["Hello there", "Hi!", "Plan my week"]
    assert body["session"]["user_id"] == "u1"
    assert body["session"]["token_count"] == sum(count_tokens(m["content"]) for m in body["messages"])
    limited = tenant_a.client.get("/api/v1/sessions/s1?limit=2").json()["messages"]
    assert [m["content"] for m in limited] == ["Hi!", "Plan my week"]

    assert tenant_b.client.get("/api/v1/sessions/s1").status_code == 404
    assert tenant_b.client.delete("/api/v1/sessions/s1").status_code == 404
    assert SessionMessage.objects.filter(session__tenant=tenant_a.tenant).count() == 3


def test_bad_messages_answer_400_and_store_nothing(tenant_a):
    assert post(tenant_a.client, "s1", {"role": "robot", "content": "x"}).status_code == 400
    r = post(tenant_a.client, "s1", {"messages": []})
    assert r.status_code == 400
    assert "messages" in r.json()["error"]["fields"]
    assert post(tenant_a.client, "s1", {"content": "no role"}).status_code == 400
    assert tenant_a.client.get("/api/v1/sessions/s1?limit=0").status_code == 400
    assert not ConversationSession.objects.exists()


def test_a_session_of_another_user_refuses_the_append(tenant_a):
    post(tenant_a.client, "s1", {"role": "user", "content": "hi", "user_id": "u1"})
    r = post(tenant_a.client, "s1", {"role": "user", "content": "hi", "user_id": "u2"})
    assert r.status_code == 409


def test_delete_removes_the_session_and_its_messages(tenant_a, tenant_b):
    post(tenant_a.client, "s1", {"role": "user", "content": "my secret plan"})
    post(tenant_b.client, "s1", {"role": "user", "content": "b's own message"})
    r = tenant_a.client.delete("/api/v1/sessions/s1")
    assert r.status_code == 200
    assert r.json()["deleted"] == {"sessions": 1, "messages": 1, "memories": 0}
    assert tenant_a.client.get("/api/v1/sessions/s1").status_code == 404
    assert not SessionMessage.objects.filter(content__contains="secret").exists()
    assert tenant_b.client.get("/api/v1/sessions/s1").json()["messages"][0]["content"] == "b's own message"


def test_trimming_never_lets_the_session_pass_its_budget_without_an_llm(tenant_a, settings):
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 200
    settings.LLM_MODEL = ""
    budget, _ = session_budget()
    assert budget == 160
    for i in range(40):
        r = post(tenant_a.client, "s1", {"role": "user", "content": sentence(5 + i % 17, seed=i)})
        assert r.status_code == 201
        session = ConversationSession.objects.get(tenant=tenant_a.tenant)
        stored = sum(SessionMessage.objects.filter(session=session).values_list("token_count", flat=True))
        assert session.token_count == stored + count_tokens(session.summary) <= budget
    session.refresh_from_db()
    assert session.trimmed_count > 0
    assert session.trimmed_count + session.messages.count() == 40
    # the newest message is always kept
    assert session.messages.order_by("-position").first().position == 39


def test_a_single_message_larger_than_the_budget_is_cut_to_the_budget(tenant_a, settings):
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 200
    post(tenant_a.client, "s1", {"role": "user", "content": "earlier message"})
    huge = sentence(1000)
    r = post(tenant_a.client, "s1", {"role": "user", "content": huge})
    assert r.status_code == 201
    kept = r.json()["appended"][0]
    assert kept["token_count"] <= 160
    assert kept["content"].endswith(" […]")
    assert huge.startswith(kept["content"][: -len(" […]")])
    session = r.json()["session"]
    assert session["token_count"] <= 160
    assert session["trimmed_count"] == 1


@respx.mock
def test_with_an_llm_trimmed_messages_are_folded_into_the_summary(tenant_a, settings):
    use_llm(settings)
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 200
    settings.SESSION_SUMMARY_MAX_TOKENS = 30
    route = respx.post(CHAT_URL).mock(return_value=chat_response("User plans a week of workouts."))
    for i in range(12):
        post(tenant_a.client, "s1", {"role": "user", "content": sentence(20, seed=i)})
    assert route.called
    prompt = route.calls[0].request.content.decode()
    assert sentence(20, seed=0) in prompt  # the oldest message went to the summariser
    session = ConversationSession.objects.get(tenant=tenant_a.tenant)
    assert session.summary == "User plans a week of workouts."
    assert session.token_count <= 160
    assert session.token_count == count_tokens(session.summary) + sum(
        session.messages.values_list("token_count", flat=True)
    )


@respx.mock
def test_a_failing_llm_still_trims_and_counts(tenant_a, settings):
    use_llm(settings)
    settings.SESSION_CONTEXT_WINDOW_TOKENS = 200
    respx.post(CHAT_URL).mock(return_value=httpx.Response(500, json={"error": {"message": "down"}}))
    for i in range(12):
        assert (
            post(tenant_a.client, "s1", {"role": "user", "content": sentence(20, seed=i)}).status_code == 201
        )
    session = ConversationSession.objects.get(tenant=tenant_a.tenant)
    assert session.summary == ""
    assert session.trimmed_count > 0
    assert session.token_count <= 160


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_get_distinct_consecutive_positions(tenant_a):
    tenant = tenant_a.tenant
    session_append(tenant=tenant, session_id="race", messages=[MessageInput("user", "start")])
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(8):
                session_append(
                    tenant=tenant, session_id="race", messages=[MessageInput("user", f"w{k} m{i}")]
                )
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    positions = list(
        SessionMessage.objects.filter(session__session_id="race").values_list("position", flat=True)
    )
    assert sorted(positions) == list(range(25))
