"""The API's outer guard: request size, path ids, and JSON (never HTML) for whatever Django itself
answers on an API path (an unknown URL, a method, an error outside DRF's exception handler)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest, HttpResponse

from memory_app.api.strict import forbidden_message, json_error

logger = logging.getLogger(__name__)
API_PREFIX = "/api/"
# Path ids are stored in varchar(255) columns (session_id, user_id) and bigint keys: a longer or
# larger value can name nothing, and checked here it never reaches a query (a DataError).
PATH_ID_MAX_CHARS = 255
BIGINT_MAX = 2**63 - 1
# Django re-escapes bytes of the path that are not UTF-8 as "%XX" text (and a double-encoded id
# arrives the same way): such an id would silently name another one, so it is refused.
LEFT_ESCAPE = re.compile("%[0-9A-Fa-f]{2}")
NOT_UTF8 = "Is not valid UTF-8 once percent-decoded (or is percent-encoded twice)."


def path_value_message(value: object) -> str | None:
    """Why a path parameter cannot name anything, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if 0 <= value <= BIGINT_MAX else f"Must be an id between 0 and {BIGINT_MAX}."
    if isinstance(value, str):
        if len(value) > PATH_ID_MAX_CHARS:
            return f"Must be at most {PATH_ID_MAX_CHARS} characters (got {len(value)})."
        if LEFT_ESCAPE.search(value):
            return NOT_UTF8
        return forbidden_message(value)
    return None


def too_large() -> HttpResponse:
    limit = settings.API_MAX_REQUEST_BYTES
    return json_error(
        "request_too_large",
        f"The request body is larger than API_MAX_REQUEST_BYTES ({limit} bytes); nothing was stored. "
        "Split it into several requests.",
        413,
    )


class ApiGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path_info.startswith(API_PREFIX):
            return self.get_response(request)
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return json_error("invalid", "Content-Length is not a number.", 400)
        if length > settings.API_MAX_REQUEST_BYTES:
            return too_large()
        response = self.get_response(request)
        if response.status_code >= 400 and not response.get("Content-Type", "").startswith(
            "application/json"
        ):
            return self._as_json(response)
        return response

    def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: dict[str, Any]
    ) -> HttpResponse | None:
        if not request.path_info.startswith(API_PREFIX):
            return None
        errors = {
            name: [message] for name, value in view_kwargs.items() if (message := path_value_message(value))
        }
        if errors:
            return json_error("invalid", f"Invalid path parameter: {', '.join(errors)}.", 400, errors)
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path_info.startswith(API_PREFIX):
            return None
        if isinstance(exception, RequestDataTooBig):
            return too_large()
        if isinstance(exception, SuspiciousOperation):
            return json_error("invalid", "The request was refused as malformed.", 400)
        logger.exception("unhandled error on %s", request.path_info)
        return json_error("server_error", "Internal error; it has been logged.", 500)

    @staticmethod
    def _as_json(response: HttpResponse) -> HttpResponse:
        status = response.status_code
        code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(
            status, "invalid" if status < 500 else "server_error"
        )
        replacement = json_error(code, response.reason_phrase or "Error.", status)
        for header in ("Allow", "Retry-After", "WWW-Authenticate"):
            if header in response:
                replacement[header] = response[header]
        return replacement
