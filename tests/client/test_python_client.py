"""The Python client (clients/python) against a live server on the test database: every operation,
sync and async, errors and pagination; retries and timeouts at the HTTP boundary."""

from __future__ import annotations

import inspect
import json
from typing import Any

import anyio
import httpx
import pytest
from memkinds_client import (
    OPERATIONS,
    AsyncMemoryClient,
    AuthenticationError,
    MemoryApiError,
    MemoryClient,
    NotFound,
    RateLimited,
    Unavailable,
    ValidationError,
)
from memkinds_client.operations import Call

from memory_app.models import MemoryChange
from tests.support.mcp_helpers import in_thread

live = pytest.mark.django_db(transaction=True)


class Recording:
    """Records which operations a client sent, to prove the scenario covers all of them."""

    def __init__(self, client: Any) -> None:
        self.sent: set[str] = set()
        original = client._send

        def send(c: Call) -> Any:
            self.sent.add(c.operation)
            return original(c)

        client._send = send


class Awaitable:
    """The sync client behind the async client's interface, so one scenario drives both."""

    def __init__(self, client: MemoryClient) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return call


async def every_operation(c: Any, change_id: Any) -> None:
    assert (await c.health())["status"]
    assert (await c.readiness())["database"]["status"] == "ok"
    outcomes = await c.store(
        [{"text": "User's BMI goal is 23", "user_id": "u1"}, {"text": "User is vegan", "user_id": "u1"}]
    )
    assert [o["outcome"] for o in outcomes] == ["created", "created"]
    update = (await c.store([{"text": "User's BMI goal is 24", "user_id": "u1"}], judge="offline"))[0]
    assert update["outcome"] == "superseded"
    newest = await c.get_memory(update["memory_id"])
    assert newest["supersedes"] == [outcomes[0]["memory_id"]]

    page = await c.list_memories(user_id="u1", page_size=1)
    assert len(page["results"]) == 1 and page["next"]
    assert (await c.lineage(newest["id"]))["memory"]["id"] == newest["id"]
    assert (await c.update_memory(newest["id"], topics=["health"]))["topics"] == ["health"]
    assert (await c.feedback(newest["id"], "helpful"))["helpful_count"] == 1
    undone = await c.undo_change(await change_id(newest["id"]))
    assert undone["result_id"] == newest["id"]

    hits = await c.search("vegan", filters={"user_id": "u1"}, limit=3, mode="hybrid")
    assert hits["results"][0]["memory"]["text"] == "User is vegan"
    context = await c.context(query="what vegan food do I eat", max_tokens=30, filters={"user_id": "u1"})
    assert "vegan" in context["context"]
    turn_context = await c.turn_context("what vegan food do I eat", user_id="u1", max_tokens=500)
    assert "vegan" in turn_context["formatted"] and turn_context["max_tokens"] == 500
    assert 0 < turn_context["tokens"]["total"] <= 500
    turn = await c.record_interaction(
        "s1",
        "I love hiking.",
        user_id="u1",
        assistant_message="Nice!",
        query="plan",
        tool_sequence=["maps"],
        success_score=1.0,
    )
    assert turn["session"]["session_id"] == "s1"
    chat = await c.record_interaction(
        "s3",
        user_id="u1",
        messages=[
            {"role": "user", "speaker": "Caroline", "content": "I adopted a cat.", "message_id": "m1"},
            {"role": "user", "speaker": "Melanie", "content": "I play the violin.", "message_id": "m2"},
        ],
        speakers={"Caroline": "u1", "Melanie": "u2"},
        extraction="rules",
    )
    stored = {m["about"]: m for m in chat["memories"]}
    assert stored["Melanie"]["user_id"] == "u2" and stored["Melanie"]["source_message_ids"] == ["m2"]
    batch = await c.record_interactions(
        [
            {"session_id": "s4", "user_id": "u1", "user_message": "I live in Lisbon."},
            {"session_id": "s5", "user_id": "u1", "messages": [{"role": "user", "content": "I am 40."}]},
        ]
    )
    assert [r["session"]["session_id"] for r in batch["results"]] == ["s4", "s5"]
    appended = await c.append_messages("s2", [{"role": "user", "content": "hello"}], user_id="u1")
    assert appended["appended"][0]["content"] == "hello"
    assert [m["content"] for m in (await c.get_session("s2", limit=5))["messages"]] == ["hello"]
    assert (await c.delete_session("s2"))["deleted"]
    procedure = await c.record_procedure("weekly summary", ["aggregate", "compare"], 12.5, 0.9)
    assert procedure["tool_sequence"] == ["aggregate", "compare"]
    assert (await c.suggest_procedure("weekly summary"))["match"] == "exact"
    assert (await c.stats(user_id="u1"))["scope"]
    assert "models" in await c.embedding_stats()
    await c.delete_memory(newest["id"])

    # errors: one base type with the API's code, message and fields, a subclass per kind
    with pytest.raises(ValidationError) as invalid:
        await c.store([{"text": ""}])
    assert (invalid.value.status, invalid.value.code) == (
        400,
        "invalid",
    ) and "items[0].text" in invalid.value.fields
    with pytest.raises(NotFound) as missing:
        await c.get_memory(10**9)
    assert (missing.value.status, missing.value.code) == (404, "not_found")
    with pytest.raises(MemoryApiError) as conflict:
        await c.update_memory(newest["id"], topics=["x"])
    assert conflict.value.status == 409
    with pytest.raises(MemoryApiError) as bad_search:
        await c.search("x", limit=0)
    assert "limit" in bad_search.value.fields
    with pytest.raises(MemoryApiError) as bad_batch:
        await c.record_interactions([{"session_id": "s6"}])
    assert bad_batch.value.status == 400 and "messages" in bad_batch.value.fields["interactions"]["0"]

    profile = await c.create_agent_profile("coach", name="Coach", config={"search": {"mmr": True}})
    assert profile["config"] == {"search": {"mmr": True}}
    assert (await c.update_agent_profile("coach", name="Head coach"))["name"] == "Head coach"
    assert (await c.get_agent_profile("coach"))["config"] == {"search": {"mmr": True}}
    assert [p["agent_id"] for p in (await c.list_agent_profiles(page_size=5))["results"]] == ["coach"]
    with pytest.raises(MemoryApiError) as bad_profile:
        await c.update_agent_profile("coach", config={"search": {"mmr": "yes"}})
    assert bad_profile.value.fields["config"] == ["search.mmr: must be true or false"]
    await c.delete_agent_profile("coach")
    records = await c.export_tenant()
    assert records[0]["type"] == "header" and any(r["type"] == "session" for r in records)
    again = await c.import_tenant(records, apply=True)  # into the tenant it came from: all there
    assert again["applied"] and set(again["imported"].values()) == {0}, again
    await c.delete_memory(outcomes[1]["memory_id"], purge=True)
    with pytest.raises(MemoryApiError) as purged:
        await c.get_memory(outcomes[1]["memory_id"])
    assert purged.value.status == 404
    assert (await c.forget_user("u1"))["user_id"] == "u1"


def latest_change_id(tenant: Any) -> Any:
    async def change_id(_memory_id: int) -> int:
        return await anyio.to_thread.run_sync(
            in_thread(lambda: MemoryChange.objects.filter(tenant=tenant, undone_at=None).latest("id").pk)
        )

    return change_id


@live
def test_the_sync_client_covers_every_operation_against_a_live_server(live_server, tenant_a):
    with MemoryClient(live_server.url, tenant_a.raw_key, timeout=60) as client:
        recorded = Recording(client)
        anyio.run(every_operation, Awaitable(client), latest_change_id(tenant_a.tenant))
    assert recorded.sent == set(OPERATIONS)


@live
def test_the_async_client_covers_every_operation_against_a_live_server(live_server, tenant_a):
    async def main() -> set[str]:
        async with AsyncMemoryClient(live_server.url, tenant_a.raw_key, timeout=60) as client:
            sent: set[str] = set()
            original = client._send

            async def send(c: Call) -> Any:
                sent.add(c.operation)
                return await original(c)

            client._send = send  # type: ignore[method-assign]
            await every_operation(client, latest_change_id(tenant_a.tenant))
            return sent

    assert anyio.run(main) == set(OPERATIONS)


@live
def test_pages_are_followed_to_the_end_sync_and_async(live_server, tenant_a):
    with MemoryClient(live_server.url, tenant_a.raw_key, timeout=60) as client:
        facts = [
            "User likes tea",
            "User owns a bike",
            "User speaks French",
            "User lives in Oslo",
            "User plays chess",
        ]
        stored = client.store([{"text": text, "user_id": "pager"} for text in facts])
        assert {o["outcome"] for o in stored} <= {"created", "queued_for_review"}  # all five stay active
        ids = [o["memory_id"] for o in stored]
        assert [m["id"] for m in client.iter_memories(user_id="pager", page_size=2)] == sorted(
            ids, reverse=True
        )

    async def collect() -> list[int]:
        async with AsyncMemoryClient(live_server.url, tenant_a.raw_key, timeout=60) as client:
            return [m["id"] async for m in client.iter_memories(user_id="pager", page_size=3)]

    assert anyio.run(collect) == sorted(ids, reverse=True)


@live
def test_a_wrong_key_and_another_tenant_are_refused(live_server, tenant_a, tenant_b):
    with (
        MemoryClient(live_server.url, tenant_a.raw_key, timeout=60) as a,
        MemoryClient(live_server.url, tenant_b.raw_key, timeout=60) as b,
    ):
        memory_id = a.store([{"text": "User likes tea", "user_id": "u1"}])[0]["memory_id"]
        with pytest.raises(MemoryApiError) as other:
            b.get_memory(memory_id)
        assert other.value.code == "not_found"
        assert b.list_memories()["results"] == []
    with (
        MemoryClient(live_server.url, "mem_wrong_key") as stranger,
        pytest.raises(AuthenticationError) as refused,
    ):
        stranger.search("tea", user_id="u1")
    assert (refused.value.status, refused.value.code) == (401, "authentication_failed")


# --- retries, backoff and timeouts, at the HTTP boundary -------------------------------------------
def replies(*answers: Any) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        # a fresh response each time: a client binds the one it receives to itself
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    return httpx.MockTransport(handler), seen


BUSY = httpx.Response(503, json={"error": {"code": "unavailable", "message": "retry later", "fields": {}}})
OK = httpx.Response(200, json={"status": "ok", "database": {}, "broker": {}, "embedding": {}})


def test_429_and_503_are_retried_with_backoff_then_succeed():
    limited = httpx.Response(
        429, headers={"Retry-After": "0"}, json={"error": {"code": "throttled", "message": "x"}}
    )
    transport, seen = replies(BUSY, limited, OK)
    with MemoryClient("http://memory", "mem_k", transport=transport, backoff=0.001) as client:
        assert client.health()["status"] == "ok"
    assert len(seen) == 3 and seen[0].headers["Authorization"] == "Bearer mem_k"


def test_retries_stop_after_max_retries_with_the_api_error():
    transport, seen = replies(BUSY, BUSY, BUSY)
    client = MemoryClient("http://memory", "k", transport=transport, max_retries=2, backoff=0.001)
    with client, pytest.raises(MemoryApiError) as failed:
        client.health()
    assert (failed.value.status, failed.value.code, failed.value.message) == (
        503,
        "unavailable",
        "retry later",
    )
    assert len(seen) == 3


def error(status: int, code: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": "m", "fields": {}}})


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (error(400, "invalid"), ValidationError),
        (error(401, "authentication_failed"), AuthenticationError),
        (error(403, "permission_denied"), AuthenticationError),
        (error(404, "not_found"), NotFound),
        (error(429, "throttled"), RateLimited),
        (error(503, "unavailable"), Unavailable),
        (httpx.Response(502, text="<html>bad gateway</html>"), Unavailable),
        (error(409, "conflict"), MemoryApiError),
    ],
    ids=lambda v: str(getattr(v, "status_code", getattr(v, "__name__", v))),
)
def test_each_kind_of_failure_raises_its_own_subclass_of_the_one_base_error(answer, kind):
    transport, _seen = replies(answer)
    client = MemoryClient("http://memory", "k", transport=transport, max_retries=0)
    with client, pytest.raises(kind) as failed:
        client.get_memory(1)
    assert isinstance(failed.value, MemoryApiError) and failed.value.status == answer.status_code


def test_no_answer_at_all_is_unavailable_and_the_default_timeout_allows_a_slow_first_call():
    transport, _seen = replies(httpx.ConnectError("refused"))
    with MemoryClient("http://memory", "k", transport=transport, max_retries=0) as client:
        assert client._http.timeout.read == 60.0
        with pytest.raises(Unavailable) as failed:
            client.health()
    assert (failed.value.status, failed.value.code) == (None, "connection_error")


def test_search_and_context_send_the_user_agent_and_session_at_the_top_level():
    found = httpx.Response(200, json={"mode": "hybrid", "count": 0, "results": [], "degraded": []})
    context = httpx.Response(
        200, json={"context": "", "tokens": 0, "query": "x", "facts": [], "degraded": []}
    )
    transport, seen = replies(found, context)
    with MemoryClient("http://memory", "k", transport=transport) as client:
        client.search("tea", user_id="u1", agent_id="a1", filters={"kind": "episodic"})
        client.context(query="tea", user_id="u1", session_id="s1")
    assert json.loads(seen[0].content) == {
        "query": "tea",
        "user_id": "u1",
        "agent_id": "a1",
        "filters": {"kind": "episodic"},
    }
    assert json.loads(seen[1].content) == {"query": "tea", "user_id": "u1", "session_id": "s1"}


def test_a_refused_connection_is_retried_and_a_post_that_timed_out_is_not():
    transport, seen = replies(httpx.ConnectError("refused"), OK)
    with MemoryClient("http://memory", "k", transport=transport, backoff=0.001) as client:
        assert client.health()["status"] == "ok"
    assert len(seen) == 2

    transport, seen = replies(httpx.ReadTimeout("slow"), OK)
    client = MemoryClient("http://memory", "k", transport=transport, backoff=0.001)
    with client, pytest.raises(MemoryApiError) as timed_out:
        client.search("x")
    assert (timed_out.value.status, timed_out.value.code, len(seen)) == (None, "timeout", 1)


def test_the_async_client_retries_the_same_way():
    async def main() -> int:
        transport, seen = replies(httpx.ConnectError("refused"), BUSY, OK)
        async with AsyncMemoryClient(
            "http://memory", "k", transport=_async(transport), backoff=0.001
        ) as client:
            assert (await client.health())["status"] == "ok"
        return len(seen)

    assert anyio.run(main) == 3


def _async(transport: httpx.MockTransport) -> httpx.MockTransport:
    return transport  # MockTransport serves both httpx.Client and httpx.AsyncClient


def test_sync_and_async_clients_offer_the_same_operations_with_the_same_signatures():
    public = {n for n in dir(MemoryClient) if not n.startswith("_")} - {"close"}
    assert public == {n for n in dir(AsyncMemoryClient) if not n.startswith("_")} - {"aclose"}
    for name in public - {"max_retries", "backoff", "base_url"}:
        sync, aio = (
            inspect.signature(getattr(MemoryClient, name)),
            inspect.signature(getattr(AsyncMemoryClient, name)),
        )
        assert list(sync.parameters.values()) == list(aio.parameters.values()), name


@live
def test_the_readme_agent_loop_runs_as_written(live_server, tenant_a, capsys):
    from tests.support.readme_snippets import readme_block

    code = readme_block("python", "from memkinds_client import MemoryClient")
    code = code.replace("http://127.0.0.1:8000", live_server.url).replace("mem_...", tenant_a.raw_key)
    prompts: list[str] = []

    def call_your_llm(prompt: str) -> str:
        prompts.append(prompt)
        return "Try a chickpea curry."

    with MemoryClient(live_server.url, tenant_a.raw_key, timeout=120) as memory:
        # the live server's first request loads the embedding model; the snippet keeps the default timeout
        memory.context(query="warm-up", filters={"user_id": "nobody"})
    exec(compile(code, "README.md", "exec"), {"call_your_llm": call_your_llm})
    assert len(prompts) == 2 and prompts[1].endswith("User: What should I cook tonight?")
    with MemoryClient(live_server.url, tenant_a.raw_key) as memory:
        session = memory.get_session("session-1")
    assert [m["content"] for m in session["messages"]] == [
        "I'm vegan, by the way.",
        "Try a chickpea curry.",
        "What should I cook tonight?",
        "Try a chickpea curry.",
    ]
