"""DNS-rebinding protection of the MCP HTTP transport: hosts and origins from the settings."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request

from memory_app.mcp.http import ApiKeyGate, transport_security


async def _inner(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 299, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _call(headers: dict[str, str]) -> tuple[int, Any]:
    """One request through ApiKeyGate (the key itself is never checked: the inner app answers 299
    and the gate would turn a bad key into a 401, so a 299 means Host and Origin passed)."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {
        "type": "http",
        "path": "/mcp",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    anyio.run(ApiKeyGate(_inner), scope, receive, send)
    start = sent[0]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], json.loads(body) if body else None


@pytest.fixture
def hosts(settings):  # type: ignore[no-untyped-def]
    settings.MCP_ALLOWED_HOSTS = ["memory.example.com", "127.0.0.1"]
    settings.MCP_ALLOWED_ORIGINS = ["https://app.example.com"]


@pytest.mark.usefixtures("hosts")
def test_a_host_not_listed_is_a_421_and_an_origin_not_listed_a_403():
    status, body = _call({"Host": "evil.example", "Authorization": "Bearer x"})
    assert status == 421 and body["error"]["data"]["code"] == "invalid_host"
    status, body = _call(
        {"Host": "memory.example.com", "Origin": "https://evil.example", "Authorization": "Bearer x"}
    )
    assert status == 403 and body["error"]["data"]["code"] == "invalid_origin"
    status, body = _call({"Host": "", "Authorization": "Bearer x"})
    assert status == 421


@pytest.mark.usefixtures("hosts")
def test_listed_hosts_at_any_port_and_listed_or_absent_origins_pass(monkeypatch):
    monkeypatch.setattr("memory_app.mcp.http.KeyCheck.checked", property(lambda self: True))
    monkeypatch.setattr("memory_app.mcp.http.KeyCheck.principal", property(lambda self: object()))
    for headers in (
        {"Host": "memory.example.com"},
        {"Host": "127.0.0.1:8001"},
        {"Host": "memory.example.com:443", "Origin": "https://app.example.com"},
    ):
        status, _body = _call({**headers, "Authorization": "Bearer x"})
        assert status == 299, headers


@pytest.mark.usefixtures("hosts")
def test_the_sdk_protection_is_on_with_the_same_hosts_and_origins():
    security = transport_security()
    assert security.enable_dns_rebinding_protection
    middleware = TransportSecurityMiddleware(security)

    def check(headers: dict[str, str]) -> int | None:
        scope = {
            "type": "http",
            "method": "GET",
            "path": "/mcp",
            "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        }
        response = anyio.run(middleware.validate_request, Request(scope))
        return None if response is None else response.status_code

    assert check({"Host": "evil.example"}) == 421
    assert check({"Host": "127.0.0.1:8001", "Origin": "https://evil.example"}) == 403
    assert check({"Host": "127.0.0.1:8001"}) is None
    assert check({"Host": "memory.example.com", "Origin": "https://app.example.com"}) is None
