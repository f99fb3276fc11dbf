"""Runs one REST operation in process for an MCP tool: the same view, so the same input serializer,
service or selector, output serializer and error handler as `/api/v1`, with no HTTP in between.

Why the view and not the services directly: the view is where an operation is defined (which fields,
their defaults and limits, how options map onto a service call, which output serializer, how an
`ApplicationError` or a validation error becomes `{"error": ...}`). A tool that called the service
itself would carry a second copy of that glue, and its messages would drift from the API's.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db import close_old_connections
from django.http import HttpRequest, QueryDict
from django.urls import NoReverseMatch, resolve, reverse

from memory_app.api.auth import TenantPrincipal
from memory_app.api.errors import error_body
from memory_app.api.guard import path_value_message

# Who calls: the tenant itself (stdio: the operator chose it), or, over HTTP, the check of the
# request's API key (`http.KeyCheck`), which runs in the operation's own worker thread and request
# cycle, as DRF authenticates a REST request inside the view: one thread hop and one connection
# health check per call, not one for the key and another for the operation.
Caller = TenantPrincipal | Callable[[], TenantPrincipal | None]
INVALID_KEY = "Invalid or revoked API key."


@dataclass(frozen=True)
class OperationResult:
    status: int
    data: Any  # the JSON body, parsed; None for 204
    text: str = ""  # the JSON body as the API rendered it

    @property
    def ok(self) -> bool:
        return self.status < 400


def _allowed_host() -> str:
    for host in settings.ALLOWED_HOSTS:
        if host != "*":
            return host.lstrip(".")
    return "localhost"


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def call_operation(
    *,
    caller: Caller,
    method: str,
    url_name: str,
    path_args: dict[str, Any] | None = None,
    query: dict[str, Any] | None = None,
    body: Any = None,
) -> OperationResult:
    """Sync (ORM inside): call it from a worker thread in async code. Connections are handled as
    Django's request cycle does (`close_old_connections` before and after, honouring CONN_MAX_AGE);
    a caller's API key is checked inside that cycle, before anything else, and a bad one is a 401."""
    close_old_connections()
    try:
        principal = caller if isinstance(caller, TenantPrincipal) else caller()
        if principal is None:
            return OperationResult(status=401, data=error_body("authentication_failed", INVALID_KEY))
        # The same path checks ApiGuardMiddleware makes over REST (this call does not pass it).
        errors = {
            name: [message]
            for name, value in (path_args or {}).items()
            if (message := path_value_message(value))
        }
        if errors:
            message = f"Invalid path parameter: {', '.join(errors)}."
            return OperationResult(status=400, data=error_body("invalid", message, errors))
        try:
            path = reverse(url_name, kwargs=path_args or {})
        except NoReverseMatch:  # e.g. a user id with a "/": no URL names it, as over REST
            return OperationResult(status=404, data=error_body("not_found", "Not found."))
        payload = b"" if body is None else json.dumps(body).encode()
        query_string = urlencode(
            {key: _query_value(value) for key, value in (query or {}).items() if value is not None}
        )
        request = HttpRequest()
        request.method = method.upper()
        request.path = request.path_info = path
        request.META = {
            "REQUEST_METHOD": request.method,
            "QUERY_STRING": query_string,
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(payload)),
            # A host Django accepts, for what builds an absolute URL (a list page's `next`).
            "HTTP_HOST": _allowed_host(),
            "SERVER_NAME": "mcp",
            "SERVER_PORT": "443",
            "HTTP_ACCEPT": "application/json",
        }
        request.GET = QueryDict(query_string)
        # A paginated operation builds absolute page links from the host. The host here is this
        # module's own constant, not a client's header, so it skips the ALLOWED_HOSTS check.
        request.get_host = lambda: "mcp"  # type: ignore[method-assign]
        request._stream = io.BytesIO(payload)  # type: ignore[attr-defined]
        request._read_started = False  # type: ignore[attr-defined]
        # DRF's documented hook for an already authenticated caller (rest_framework.request.Request
        # reads it): the MCP transport authenticated the API key, or stdio was started for a tenant.
        request._force_auth_user = principal  # type: ignore[attr-defined]
        match = resolve(path)
        response = match.func(request, *match.args, **match.kwargs)
        response.render()
        text = response.content.decode()
        data = json.loads(text) if text else None
        return OperationResult(status=response.status_code, data=data, text=text)
    finally:
        close_old_connections()
