"""One exception handler: every error body is {"error": {"code", "message", "fields"}}."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DatabaseError, DataError, IntegrityError, InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from memory_app.api.guard import too_large
from memory_app.db.conflicts import conflict_message
from memory_app.embeddings.active import active_model_forget
from memory_app.errors import ApplicationError

logger = logging.getLogger(__name__)


def error_body(code: str, message: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def _flatten(detail: Any) -> Any:
    """DRF ErrorDetail trees → plain strings, lists and dicts."""
    if isinstance(detail, dict):
        return {str(key): _flatten(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [_flatten(item) for item in detail]
    return str(detail)


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """A serializer's nested errors as {"field": [...], "topics.2": [...]} (one level of keys)."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            out.update(flatten_errors(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(detail, list) and any(isinstance(item, dict) for item in detail):
        out = {}
        for index, item in enumerate(detail):
            if item:
                out.update(flatten_errors(item, f"{prefix}.{index}" if prefix else str(index)))
        return out
    messages = _flatten(detail)
    return {prefix or "non_field_errors": messages if isinstance(messages, list) else [messages]}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    if isinstance(exc, RequestDataTooBig):
        return Response(json.loads(too_large().content), status=413)
    if isinstance(exc, ApplicationError):
        return Response(error_body(exc.code, exc.message, exc.fields), status=exc.status)
    if isinstance(exc, ObjectDoesNotExist):
        # A row a service read a moment earlier and another request deleted since: gone, not a bug.
        logger.info("row gone in %s: %s", context.get("view").__class__.__name__, exc)
        return Response(error_body("not_found", "Not found (deleted meanwhile)."), status=404)
    if isinstance(exc, Http404):
        return Response(error_body("not_found", "Not found."), status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, DjangoPermissionDenied):
        return Response(
            error_body("permission_denied", "Permission denied."), status=status.HTTP_403_FORBIDDEN
        )
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail
        if isinstance(detail, dict):
            fields = _flatten(detail)
            non_field = fields.pop("non_field_errors", None)
            message = "; ".join(non_field) if non_field else "Invalid input."
            return Response(error_body("invalid", message, fields), status=status.HTTP_400_BAD_REQUEST)
        messages = _flatten(detail)
        text = "; ".join(messages) if isinstance(messages, list) else str(messages)
        return Response(error_body("invalid", text or "Invalid input."), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, exceptions.APIException):
        headers: dict[str, str] = {}
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            headers["WWW-Authenticate"] = 'Bearer realm="api"'
        if getattr(exc, "wait", None):
            headers["Retry-After"] = str(int(exc.wait))  # type: ignore[attr-defined]
        detail = _flatten(exc.detail)
        message = detail if isinstance(detail, str) else "; ".join(map(str, detail))
        return Response(error_body(exc.default_code, message), status=exc.status_code, headers=headers)
    if isinstance(exc, DatabaseError | InterfaceError):  # PEP 249: InterfaceError is not a DatabaseError
        return database_error_response(exc, context)
    logger.exception("unhandled error in %s", context.get("view").__class__.__name__)
    return Response(error_body("server_error", "Internal error; it has been logged."), status=500)


# pgvector refusing a vector of another width than its column, or two vectors of different widths.
# Never the client's doing (the API takes no vectors): a process that has not yet re-read the
# columns' width after a `reindex --apply --resize` (embeddings/active.py, at most seconds late).
_WIDTH_CHANGED = re.compile(r"expected \d+ dimensions, not \d+|different (half)?vec(tor)? dimensions")


def _diag(exc: DatabaseError | InterfaceError) -> Any:
    """psycopg's diagnostics of the error Django wrapped (column, constraint, table), when any."""
    return getattr(exc.__cause__, "diag", None)


def database_error_response(exc: DatabaseError | InterfaceError, context: dict[str, Any]) -> Response:
    """A database error by its cause: only a lost or unreachable database (a connection or pool
    failure, a lock or statement time-out) is a 503 a client may retry. A value the database refuses
    is the client's mistake (400), a conflicting concurrent change a 409; any other error is a bug
    (500). A client that retries every 503 must never resend a request that cannot succeed."""
    view = context.get("view").__class__.__name__
    diag = _diag(exc)
    if isinstance(exc, DataError) and _WIDTH_CHANGED.search(str(exc)):
        logger.warning("vector width changed under %s: %s", view, str(exc).strip().splitlines()[0])
        active_model_forget()  # the retry reads the new model and width
        return Response(
            error_body("unavailable", "The embedding model is being changed; retry in a second."),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "1"},
        )
    if isinstance(exc, DataError):
        column = getattr(diag, "column_name", None) or "non_field_errors"
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid value"
        logger.info("data error in %s: %s", view, first_line)
        return Response(
            error_body(
                "invalid",
                f"A value does not fit its field ({first_line}); nothing was stored.",
                {column: [first_line]},
            ),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, IntegrityError):
        logger.warning("integrity error in %s: %s", view, exc)
        return Response(error_body("conflict", conflict_message(exc)), status=status.HTTP_409_CONFLICT)
    if isinstance(exc, OperationalError | InterfaceError):
        logger.exception("database unavailable in %s", view)
        return Response(
            error_body("unavailable", "The database is unavailable; retry later."),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "1"},
        )
    logger.exception("database error in %s", view)
    return Response(error_body("server_error", "Internal error; it has been logged."), status=500)
