"""Streamable HTTP: the SDK's ASGI app at `/mcp`, behind the REST API's key check.

`project/asgi.py` routes `/mcp` here and everything else to Django. Stateless JSON responses: every
POST is answered on its own (no server-side session, no SSE stream), so any worker of any process can
serve any request and a load balancer needs no affinity.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port
from mcp.server.transport_security import TransportSecuritySettings

from memory_app.api.auth import TenantPrincipal
from memory_app.api.errors import error_body
from memory_app.mcp.dispatch import INVALID_KEY
from memory_app.mcp.server import build_server
from memory_app.services.api_keys import api_key_authenticate

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
MCP_PATH = "/mcp"


class KeyCheck:
    """One request's API key, checked at most once, exactly as `ApiKeyAuthentication` checks it (one
    indexed query; `last_used_at` at most once a minute), never cached across requests: a revoked
    key or a deactivated tenant is refused from the next request on, as over REST.

    Who runs it: the operation the request calls, first thing in its worker thread and request cycle
    (`dispatch.call_operation`), so a tool call costs one thread hop and one connection health check
    as a REST request does; or `ApiKeyGate`, just before the response starts, when nothing asked for
    the tenant (initialize, tools/list, an argument refused before the view). Either way no response
    leaves before the key is checked, and a bad key's is replaced by the 401."""

    def __init__(self, raw_key: str) -> None:
        self._raw_key = raw_key
        self._lock = threading.Lock()  # the gate and a handler's thread could both ask (SSE streams)
        self._checked = False
        self._principal: TenantPrincipal | None = None

    def __call__(self) -> TenantPrincipal | None:
        """Sync (ORM): in a worker thread, inside a request cycle (close_old_connections around)."""
        with self._lock:
            if not self._checked:
                api_key = api_key_authenticate(raw_key=self._raw_key)
                if api_key is not None:
                    self._principal = TenantPrincipal(tenant=api_key.tenant, api_key=api_key)
                self._checked = True
            return self._principal

    @property
    def checked(self) -> bool:
        return self._checked

    @property
    def principal(self) -> TenantPrincipal | None:
        return self._principal


def _check_in_own_cycle(check: KeyCheck) -> None:
    close_old_connections()
    try:
        check()
    finally:
        close_old_connections()


# JSON-RPC's range for server-defined errors; MCP defines none for authentication.
JSONRPC_CODES = {401: -32001, 400: -32600, 403: -32001, 421: -32600}


def refusal_body(status: int, code: str, message: str) -> dict[str, Any]:
    """A JSON-RPC error carrying the REST API's error body as `data`. Why JSON-RPC: the SDK's
    client reads an error response's body only when it is a JSON-RPC error (anything else becomes a
    bare -32603 'Server returned an error response'), so an agent sees why it was refused."""
    return {
        "jsonrpc": "2.0",
        "id": None,  # refused before the request's id was read; the client matches its own request
        "error": {
            "code": JSONRPC_CODES[status],
            "message": message,
            "data": error_body(code, message)["error"],
        },
    }


async def _refuse(send: Callable[[Any], Awaitable[None]], status: int, code: str, message: str) -> None:
    body = json.dumps(refusal_body(status, code, message)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="api"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def transport_security() -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection, on, with the hosts (any port) and origins of the settings."""
    hosts = list(settings.MCP_ALLOWED_HOSTS)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[
            *hosts,
            *(f"{host}:*" for host in hosts if ":" not in host.lstrip("[").split("]")[-1]),
        ],
        allowed_origins=list(settings.MCP_ALLOWED_ORIGINS),
    )


def _host_allowed(host: str) -> bool:
    """The SDK's rule (an entry exactly, or a name without a port at any port), checked before the
    API key so a rebinding page learns nothing else from the answer."""
    domain, _port = split_domain_port(host)
    allowed = settings.MCP_ALLOWED_HOSTS
    return bool(domain) and (host.lower() in allowed or domain in allowed)


def _origin_allowed(origin: str) -> bool:
    """No Origin (not a browser) passes; a browser's must be listed exactly, or as "scheme://host:*"."""
    if not origin:
        return True
    allowed = settings.MCP_ALLOWED_ORIGINS
    return origin in allowed or any(
        entry.endswith(":*") and origin.startswith(entry[:-1]) for entry in allowed
    )


class ApiKeyGate:
    """Checks the Host and Origin against MCP_ALLOWED_HOSTS and MCP_ALLOWED_ORIGINS (DNS-rebinding
    protection: 421 and 403, as the SDK's own check, which is on too) and the bearer API key exactly
    as `ApiKeyAuthentication` does, with the same statuses and messages (in a JSON-RPC error body,
    `refusal_body`). A missing or malformed
    header is refused at once; a well-formed key rides on the ASGI scope's state as a `KeyCheck`
    (the SDK's handlers see it as `ctx.request.state.caller`), run by the operation that needs the
    tenant or here before the response starts, whose status becomes 401 if the key is bad."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        if not _host_allowed(headers.get("host", "")):
            await _refuse(send, 421, "invalid_host", "Host not allowed (MCP_ALLOWED_HOSTS).")
            return
        if not _origin_allowed(headers.get("origin", "")):
            await _refuse(send, 403, "invalid_origin", "Origin not allowed (MCP_ALLOWED_ORIGINS).")
            return
        parts = headers.get("authorization", "").split()
        if not parts:
            await _refuse(send, 401, "not_authenticated", "Authentication credentials were not provided.")
            return
        if len(parts) != 2 or parts[0].lower() != "bearer":
            message = "Authorization header must be 'Bearer <api key>'."
            await _refuse(send, 401, "authentication_failed", message)
            return
        check = KeyCheck(parts[1])
        scope.setdefault("state", {})["caller"] = check
        refused = False

        async def send_checked(message: Any) -> None:
            nonlocal refused
            if refused:  # the body of the response the 401 replaced
                return
            if message["type"] == "http.response.start":
                if not check.checked:
                    await sync_to_async(_check_in_own_cycle, thread_sensitive=False)(check)
                if check.principal is None:
                    refused = True
                    await _refuse(send, 401, "authentication_failed", INVALID_KEY)
                    return
            await send(message)

        await self.app(scope, receive, send_checked)


def mcp_asgi_app() -> ASGIApp:
    """A new MCP app (its session manager runs once, in the ASGI lifespan)."""
    server = build_server()
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        # ApiKeyGate checks Host and Origin first (JSON bodies); the SDK's check stays on behind it.
        transport_security=transport_security(),
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
