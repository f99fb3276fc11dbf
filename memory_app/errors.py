"""The one application error type. Services raise it; the API's exception handler renders it."""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A refused operation with a stable code, a message for humans and optional per-field messages."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "invalid",
        status: int = 400,
        fields: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.fields = fields or {}


def not_found(what: str) -> ApplicationError:
    return ApplicationError(f"{what} not found", code="not_found", status=404)
