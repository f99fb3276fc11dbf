"""One base error, `MemoryApiError`, and a subclass per kind of failure a caller handles
differently: fix the input (ValidationError), the key (AuthenticationError), the id (NotFound), or
wait and retry (RateLimited, Unavailable)."""

from __future__ import annotations

from typing import Any


class MemoryApiError(Exception):
    """Every failure of a call: the API's `{"error": {"code", "message", "fields"}}` with the HTTP
    status, or, with `status` None, a network failure or timeout after the retries
    (code `connection_error` or `timeout`, raised as `Unavailable`)."""

    def __init__(
        self, *, status: int | None, code: str, message: str, fields: dict[str, Any] | None = None
    ) -> None:
        super().__init__(f"{status or '-'} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.fields: dict[str, Any] = fields or {}

    @classmethod
    def from_response(cls, status: int, body: Any, text: str) -> MemoryApiError:
        kind = BY_STATUS.get(status, MemoryApiError)
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            return kind(
                status=status,
                code=str(error.get("code", "error")),
                message=str(error.get("message", "")),
                fields=error.get("fields") or {},
            )
        # not the API's error body (a proxy in between, for example)
        return kind(status=status, code="http_error", message=text[:500] or f"HTTP {status}")


class ValidationError(MemoryApiError):
    """400: bad input; `fields` maps each bad field to its messages. Nothing was changed."""


class AuthenticationError(MemoryApiError):
    """401 or 403: the API key is missing, malformed, revoked, or not allowed this."""


class NotFound(MemoryApiError):
    """404: no such object in this key's tenant."""


class RateLimited(MemoryApiError):
    """429 after the retries: too many requests; wait and retry."""


class Unavailable(MemoryApiError):
    """503 after the retries, or no answer at all (status None: connection_error or timeout)."""


BY_STATUS: dict[int, type[MemoryApiError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: AuthenticationError,
    404: NotFound,
    429: RateLimited,
    502: Unavailable,
    503: Unavailable,
    504: Unavailable,
}
