"""Streamable HTTP: the SDK's ASGI app at `/mcp`, behind the REST API's key check.

`project/asgi.py` routes `/mcp` here and everything else to Django. Stateless JSON responses: every
POST is answered on its own (no server-side session, no SSE stream), so any worker of any process can
serve any request and a load balancer needs no affinity.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.transport_security import TransportSecuritySettings

from memory_app.api.auth import TenantPrincipal
from memory_app.api.errors import error_body
from memory_app.mcp.server import build_server
from memory_app.services.api_keys import api_key_authenticate

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
MCP_PATH = "/mcp"


def _authenticate(raw_key: str) -> TenantPrincipal | None:
    close_old_connections()
    try:
        api_key = api_key_authenticate(raw_key=raw_key)
        if api_key is None:
            return None
        return TenantPrincipal(tenant=api_key.tenant, api_key=api_key)
    finally:
        close_old_connections()


async def _refuse(send: Callable[[Any], Awaitable[None]], status: int, code: str, message: str) -> None:
    body = json.dumps(error_body(code, message)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="api"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class ApiKeyGate:
    """Checks the Host against ALLOWED_HOSTS (what Django does for every other URL) and the bearer
    API key exactly as `ApiKeyAuthentication` does; the principal rides on the ASGI scope's state,
    which the SDK's handlers see as `ctx.request.state.principal`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        domain, _port = split_domain_port(headers.get("host", ""))
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            await _refuse(send, 400, "invalid_host", "Host not allowed (ALLOWED_HOSTS).")
            return
        parts = headers.get("authorization", "").split()
        if not parts:
            await _refuse(send, 401, "not_authenticated", "Authentication credentials were not provided.")
            return
        if len(parts) != 2 or parts[0].lower() != "bearer":
            message = "Authorization header must be 'Bearer <api key>'."
            await _refuse(send, 401, "authentication_failed", message)
            return
        principal = await sync_to_async(_authenticate, thread_sensitive=False)(parts[1])
        if principal is None:
            await _refuse(send, 401, "authentication_failed", "Invalid or revoked API key.")
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


def mcp_asgi_app() -> ASGIApp:
    """A new MCP app (its session manager runs once, in the ASGI lifespan)."""
    server = build_server()
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        # The Host check the SDK would do for DNS-rebinding protection is ApiKeyGate's, against
        # Django's ALLOWED_HOSTS; a browser page cannot forge the bearer key anyway.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return ApiKeyGate(app)


def with_mcp(django_app: ASGIApp) -> ASGIApp:
    """Django's ASGI app with `/mcp` served by the MCP SDK (and the ASGI lifespan, which Django does
    not handle and the SDK needs to run its session manager)."""
    mcp_app = mcp_asgi_app()

    async def application(scope: Scope, receive: Any, send: Any) -> None:
        mcp_path = scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH
        if scope["type"] == "lifespan" or mcp_path:
            await mcp_app(scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return application
