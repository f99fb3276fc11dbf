from __future__ import annotations

from typing import Any


class MemoryApiError(Exception):
    """Every failure of a call: the API's `{"error": {"code", "message", "fields"}}` with the HTTP
    status, or, with `status` None, a network failure or timeout after the retries
    (code `connection_error` or `timeout`)."""

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
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            return cls(
                status=status,
                code=str(error.get("code", "error")),
                message=str(error.get("message", "")),
                fields=error.get("fields") or {},
            )
        # not the API's error body (a proxy in between, for example)
        return cls(status=status, code="http_error", message=text[:500] or f"HTTP {status}")
