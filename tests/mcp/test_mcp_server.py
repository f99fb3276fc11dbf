"""The MCP server through the SDK's own client, over stdio and over streamable HTTP as it is served
(bin/serve-mcp): every tool, the prompt and the resource, a second tenant that sees nothing, and bad
arguments answered clearly."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from memory_app.mcp.schemas import KNOB_MESSAGE, OPERATOR_KNOBS
from memory_app.models import Memory, Tenant
from memory_app.services.agent_profiles import agent_profile_create
from memory_app.services.api_keys import api_key_revoke
from tests.conftest import TenantClient
from tests.support.mcp_helpers import (
    TOOL_NAMES,
    data,
    error_of,
    http_client,
    in_thread,
    mcp_process,
    stdio_client,
)
from tests.support.readme_snippets import readme_block

pytestmark = pytest.mark.django_db(transaction=True)
# What an agent's context pays for the tool list (JSON as the client receives it).
TOOLS_LIST_MAX_CHARS = 12_000


async def every_tool(client: Client, other: Client) -> dict[str, Any]:
    """Calls every tool once as tenant A (`client`), checks what `other` (tenant B) can see."""
    tools = await client.list_tools()
    assert {tool.name for tool in tools.tools} == TOOL_NAMES
    assert len(tools.model_dump_json(by_alias=True, exclude_none=True)) <= TOOLS_LIST_MAX_CHARS
    for tool in tools.tools:
        assert tool.description and tool.input_schema["type"] == "object", tool.name
        assert not OPERATOR_KNOBS & set(tool.input_schema["properties"]), tool.name

    stored = data(
        await client.call_tool(
            "store_memories",
            {"memories": [{"text": "User is allergic to peanuts", "user_id": "u1", "topics": ["health"]}]},
        )
    )["results"]
    assert stored[0]["outcome"] == "created" and stored[0]["text"] == "User is allergic to peanuts"
    memory_id = stored[0]["id"]
    # written to this test's database, in tenant A (not to some other database the server found)
    row = await anyio.to_thread.run_sync(
        in_thread(lambda: Memory.objects.filter(pk=memory_id).values("tenant__slug").first())
    )
    assert row == {"tenant__slug": "tenant-a"}

    found = data(await client.call_tool("search_memories", {"query": "peanuts", "user_id": "u1"}))
    assert [hit["id"] for hit in found["results"]] == [memory_id]
    assert set(found["results"][0]) <= {"id", "text", "score", "created_at", "event_date", "user_id", "kind"}
    assert found["results"][0]["score"] > 0
    as_filter = data(
        await client.call_tool("search_memories", {"query": "peanuts", "filters": {"user_id": "u1"}})
    )
    assert [hit["id"] for hit in as_filter["results"]] == [memory_id]
    context = data(
        await client.call_tool(
            "get_context", {"query": "can I cook with peanuts?", "max_tokens": 40, "user_id": "u1"}
        )
    )
    assert "peanuts" in context["context"] and context["tokens"] <= 40
    listed = data(await client.call_tool("list_memories", {"user_id": "u1"}))
    assert [memory["id"] for memory in listed["results"]] == [memory_id]
    assert data(await client.call_tool("list_memories", {"user_id": "u2"}))["results"] == []
    turn = data(
        await client.call_tool(
            "get_turn_context", {"query": "peanut allergy", "user_id": "u1", "max_tokens": 300}
        )
    )
    assert "peanuts" in turn["formatted"]
    assert turn["max_tokens"] == 300 and 0 < turn["tokens"]["total"] <= 300
    recorded = data(
        await client.call_tool(
            "record_interaction",
            {
                "session_id": "s1",
                "user_id": "u1",
                "user_message": "I love hiking in the mountains.",
                "assistant_message": "Noted!",
                "query": "plan a hike",
                "tool_sequence": ["maps", "weather"],
                "success_score": 0.9,
            },
        )
    )
    assert recorded["session"]["session_id"] == "s1" and recorded["procedure"]["tool_sequence"] == [
        "maps",
        "weather",
    ]
    assert (
        data(await client.call_tool("get_memory", {"memory_id": memory_id}))["text"]
        == "User is allergic to peanuts"
    )
    updated = data(await client.call_tool("update_memory", {"memory_id": memory_id, "pinned": True}))
    assert updated["pinned"] is True and updated["id"] == memory_id
    rated = data(await client.call_tool("memory_feedback", {"memory_id": memory_id, "signal": "helpful"}))
    assert rated["helpful_count"] == 1
    learned = data(await client.call_tool("list_memories", {"user_id": "u1", "page_size": 1}))
    assert len(learned["results"]) == 1 and learned["next_cursor"]
    suggestion = data(await client.call_tool("suggest_procedure", {"query": "plan a hike", "user_id": "u1"}))
    assert suggestion["match"] == "exact" and suggestion["procedure"]["tool_sequence"] == ["maps", "weather"]

    prompt = await client.get_prompt(
        "memory_context", {"message": "Suggest a snack with peanuts", "user_id": "u1"}
    )
    assert "peanuts" in prompt.messages[0].content.text
    resource = await client.read_resource(f"memory://memories/{memory_id}")
    assert '"pinned": true' in resource.contents[0].text

    await anyio.to_thread.run_sync(
        in_thread(
            lambda: agent_profile_create(
                tenant=Tenant.objects.get(slug="tenant-a"), agent_id="coach", config={"search": {"mmr": True}}
            )
        )
    )
    assert [r.uri for r in (await client.list_resources()).resources] == ["memory://agent-profiles"]
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert templates == {"memory://memories/{memory_id}", "memory://agent-profiles/{agent_id}"}
    profiles = await client.read_resource("memory://agent-profiles")
    assert '"agent_id": "coach"' in profiles.contents[0].text
    profile = await client.read_resource("memory://agent-profiles/coach")
    assert '"mmr": true' in profile.contents[0].text
    assert '"results": []' in (await other.read_resource("memory://agent-profiles")).contents[0].text
    with pytest.raises(MCPError):
        await other.read_resource("memory://agent-profiles/coach")
    with pytest.raises(MCPError):
        await client.read_resource("memory://agent-profiles/nobody")

    # the other tenant sees nothing of this one's
    assert error_of(await other.call_tool("get_memory", {"memory_id": memory_id}))["code"] == "not_found"
    assert (
        data(await other.call_tool("search_memories", {"query": "peanuts", "user_id": "u1"}))["results"] == []
    )
    assert error_of(await other.call_tool("memory_feedback", {"memory_id": memory_id, "signal": "harmful"}))
    with pytest.raises(MCPError):
        await other.read_resource(f"memory://memories/{memory_id}")

    # an operator's knob is refused, naming it, not silently obeyed
    knob = error_of(await client.call_tool("search_memories", {"query": "x", "mmr_lambda": 0.2}))
    assert knob["fields"] == {"mmr_lambda": [KNOB_MESSAGE]}
    disagree = error_of(
        await client.call_tool(
            "search_memories", {"query": "x", "user_id": "u1", "filters": {"user_id": "u2"}}
        )
    )
    assert "user_id" in disagree["fields"]

    # bad arguments: the API's own messages, per field
    bad = error_of(
        await client.call_tool("store_memories", {"memories": [{"text": "  "}, {"text": "ok", "kind": "x"}]})
    )
    assert bad["code"] == "invalid" and set(bad["fields"]) == {"items[0].text", "items[1].kind"}
    assert "blank" in bad["fields"]["items[0].text"][0]
    assert (
        "limit" in error_of(await client.call_tool("search_memories", {"query": "x", "limit": 0}))["fields"]
    )
    assert error_of(await client.call_tool("get_memory", {"memory_id": "abc"}))["fields"] == {
        "memory_id": ["A valid integer is required."]
    }
    assert error_of(await client.call_tool("delete_user_memories", {"user_id": "a/b"}))["code"] == "not_found"
    for wrong in (-3, 0, 2**70):
        assert "memory_id" in error_of(await client.call_tool("get_memory", {"memory_id": wrong}))["fields"]
    assert error_of(await client.call_tool("memory_feedback", {"memory_id": memory_id}))["fields"]["signal"]
    assert error_of(await client.call_tool("no_such_tool", {}))["code"] == "not_found"

    other_memory = data(
        await client.call_tool("store_memories", {"memories": [{"text": "User likes tea", "user_id": "u3"}]})
    )["results"][0]["id"]
    assert (
        error_of(await other.call_tool("delete_memory", {"memory_id": other_memory}))["code"] == "not_found"
    )
    assert data(await client.call_tool("delete_memory", {"memory_id": other_memory})) == {
        "deleted": other_memory
    }
    assert data(await client.call_tool("list_memories", {"user_id": "u3"}))["results"] == []
    assert data(await client.call_tool("get_memory", {"memory_id": other_memory}))["status"] == "deleted"

    deleted = data(await client.call_tool("delete_user_memories", {"user_id": "u1"}))
    assert deleted["user_id"] == "u1" and deleted["deleted"]
    return {"memory_id": memory_id}


async def connect_with_key(url: str, key: str | None) -> None:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60))
    async with Client(transport, read_timeout_seconds=60) as client:
        await client.list_tools()


async def two_sessions(a: Client, b: Client) -> dict[str, Any]:
    async with a, b:
        return await every_tool(a, b)


def test_over_stdio_every_tool_works_and_another_tenant_sees_nothing(
    tenant_a: TenantClient, tenant_b: TenantClient
):
    result = anyio.run(two_sessions, stdio_client(tenant_a.tenant.slug), stdio_client(tenant_b.tenant.slug))
    assert not Memory.objects.filter(pk=result["memory_id"]).exists()  # forgotten by delete_user_memories


def test_stdio_refuses_an_unknown_tenant(tenant_a: TenantClient):
    async def connect() -> None:
        async with stdio_client("no-such-tenant"):
            pass

    with pytest.raises(Exception):  # noqa: B017 - the subprocess exits before the handshake
        anyio.run(connect)


def test_over_http_every_tool_works_with_api_keys_and_tenants_stay_apart(
    tenant_a: TenantClient, tenant_b: TenantClient, capsys: pytest.CaptureFixture[str]
):
    # the process bin/serve and docker-compose run for /mcp (bin/serve-mcp: uvicorn, project.asgi)
    with mcp_process() as base:
        url = f"{base}/mcp"
        result = anyio.run(
            two_sessions, http_client(url, tenant_a.raw_key), http_client(url, tenant_b.raw_key)
        )
        assert not Memory.objects.filter(pk=result["memory_id"]).exists()

        # no key (refused before the MCP layer), a bad key (checked before any response leaves): the
        # REST API's 401 and error body
        ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {"Accept": "application/json, text/event-stream"}
        missing = httpx.post(url, json=ping, headers=headers)
        assert missing.status_code == 401 and missing.json()["error"]["data"]["code"] == "not_authenticated"
        wrong = httpx.post(url, json=ping, headers={**headers, "Authorization": "Bearer mem_nope_nope"})
        assert wrong.status_code == 401 and wrong.json()["error"]["message"] == "Invalid or revoked API key."
        # a Host outside MCP_ALLOWED_HOSTS (DNS rebinding) is refused whatever the key
        auth = {**headers, "Authorization": f"Bearer {tenant_a.raw_key}", "Host": "evil.example"}
        refused = httpx.post(url, json=ping, headers=auth)
        assert refused.status_code == 421 and refused.json()["error"]["data"]["code"] == "invalid_host"
        page = {**headers, "Authorization": f"Bearer {tenant_a.raw_key}", "Origin": "https://evil.example"}
        refused = httpx.post(url, json=ping, headers=page)
        assert refused.status_code == 403 and refused.json()["error"]["data"]["code"] == "invalid_origin"
        # through the SDK's client: the reason, not a bare -32603
        for key, reason in ((None, "credentials were not provided"), ("mem_nope_nope", "Invalid or revoked")):
            # raised from the client's task group, so inside an exception group
            with pytest.raises(BaseExceptionGroup) as refused_group:
                anyio.run(connect_with_key, url, key)
            assert refused_group.group_contains(MCPError, match=reason, depth=None)
        # the REST API is served by the same ASGI application
        rest = httpx.get(f"{base}/api/v1/memories", headers={"Authorization": f"Bearer {tenant_a.raw_key}"})
        assert rest.status_code == 200 and rest.json()["results"] == []

        # the README's Python snippet, pasted with this server's URL and a key
        stored = tenant_a.client.post(
            "/api/v1/memories", {"text": "User has a peanut allergy", "user_id": "u1"}, format="json"
        )
        assert stored.status_code == 201, stored.content
        code = readme_block("python", "streamable_http_client")
        pasted = code.replace("http://127.0.0.1:8001", base).replace("mem_...", tenant_a.raw_key)
        exec(compile(pasted, "README.md", "exec"), {"__name__": "__main__"})
        printed = capsys.readouterr().out
        assert all(name in printed for name in TOOL_NAMES) and "User has a peanut allergy" in printed


async def tool_calls_across_a_revocation(url: str, tenant: TenantClient) -> list[tuple[int, Any]]:
    """One session whose key is revoked between two tool calls: the HTTP answers to its tools/calls."""
    answers: list[tuple[int, Any]] = []

    async def record(response: httpx2.Response) -> None:
        if response.request.headers.get("mcp-method") == "tools/call":
            await response.aread()
            answers.append((response.status_code, response.json()))

    headers = {"Authorization": f"Bearer {tenant.raw_key}"}
    http = httpx2.AsyncClient(headers=headers, timeout=60, event_hooks={"response": [record]})
    async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
        assert (
            data(await client.call_tool("search_memories", {"query": "peanuts", "user_id": "u1"}))["results"]
            == []
        )
        revoke = in_thread(lambda: api_key_revoke(api_key=tenant.tenant.api_keys.get()))
        await anyio.to_thread.run_sync(revoke)
        with pytest.raises(MCPError):
            await client.call_tool(
                "store_memories", {"memories": [{"text": "User is allergic to peanuts", "user_id": "u1"}]}
            )
    return answers


def test_over_http_a_key_revoked_mid_session_gets_a_401_on_its_next_tool_call_and_stores_nothing(
    tenant_a: TenantClient,
):
    # the key is checked inside each tool call's own worker thread, never remembered between requests
    with mcp_process() as base:
        answers = anyio.run(tool_calls_across_a_revocation, f"{base}/mcp", tenant_a)
    assert [status for status, _body in answers] == [200, 401]
    assert answers[1][1]["error"]["data"] == {
        "code": "authentication_failed",
        "message": "Invalid or revoked API key.",
        "fields": {},
    }
    assert not Memory.objects.filter(tenant=tenant_a.tenant).exists()
