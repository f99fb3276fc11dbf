"""The per-API-key request rate (QUOTA_REQUESTS_PER_MINUTE): 429 with Retry-After past it."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from memory_app.api.auth import TenantPrincipal
from memory_app.services.quotas import request_rate_wait


class ApiKeyRateThrottle(BaseThrottle):
    """Counts the requests of each API key (a local MCP server without a key counts per tenant);
    unauthenticated requests are refused before anything is counted."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        principal = request.user
        if not isinstance(principal, TenantPrincipal):
            return True
        self._wait = request_rate_wait(key_id=principal.pk)
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait
