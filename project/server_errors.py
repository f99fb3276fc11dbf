"""The JSON error body for requests the HTTP servers refuse before Django sees them.

gunicorn and uvicorn answer a malformed request (a NUL in the request line, a header block over
the limit) themselves, with an HTML page or plain text. A client of this service expects
`{"error": {"code", "message", "fields"}}` on every answer, so both servers are given a subclass
that keeps their own decision (which status, whether to answer at all) and changes only the body:
`JsonErrorWorker` (gunicorn's gthread worker, project/gunicorn.conf.py) and `JsonErrorH11Protocol`
(uvicorn's h11 protocol, bin/serve-mcp).
"""

from __future__ import annotations

import json
import re
from typing import Any

import h11
from gunicorn.workers.gthread import ThreadWorker
from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE  # as uvicorn's h11_impl imports it
from uvicorn.protocols.http.h11_impl import H11Protocol

CODES = {
    400: "invalid",
    403: "forbidden",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "headers_too_large",
    501: "not_implemented",
}
REASONS = {400: "Bad Request", 431: "Request Header Fields Too Large"}
MESSAGES = {
    400: "Malformed HTTP request.",
    414: "The request line is too long.",
    431: "The request's header fields are too large.",
    500: "Internal error; it has been logged.",
}
# A refused request can carry anything; its detail is quoted only this far.
DETAIL_MAX_CHARS = 200
STATUS_LINE = re.compile(rb"^HTTP/1\.[01] (\d{3}) ([^\r\n]*)\r\n")


def error_response(status: int, reason: str, detail: str = "") -> bytes:
    """A complete HTTP/1.1 response carrying the service's error body; the connection closes."""
    message = MESSAGES.get(status, reason + ".")
    if detail:
        message = f"{message} {detail[:DETAIL_MAX_CHARS]}"
    code = CODES.get(status, "server_error" if status >= 500 else "invalid")
    body = json.dumps({"error": {"code": code, "message": message, "fields": {}}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


class _Capture:
    """Stands in for the client socket while gunicorn writes its HTML error page, so the status it
    chose can be read back (gunicorn writes it with `util.write_nonblock`: gettimeout, sendall)."""

    def __init__(self) -> None:
        self.data = b""

    def gettimeout(self) -> float:
        return 0.0

    def sendall(self, data: bytes) -> None:
        self.data += data


class JsonErrorWorker(ThreadWorker):
    """gunicorn's gthread worker, answering refused requests with the JSON error body."""

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        capture = _Capture()
        # gunicorn classifies the error, logs it and writes the access-log line; its page is kept
        # aside and only its status line reused.
        super().handle_error(req, capture, addr, exc)
        match = STATUS_LINE.match(capture.data)
        status, reason = (
            (int(match[1]), match[2].decode("latin-1")) if match else (500, "Internal Server Error")
        )
        detail = "" if status >= 500 else str(exc)
        try:
            client.sendall(error_response(status, reason, detail))
        except OSError:
            self.log.debug("Failed to send error message.")


class JsonErrorH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering a request h11 cannot parse with the JSON error body (400),
    and a header block longer than h11's incomplete-event limit (16 KB unless
    `--h11-max-incomplete-event-size`) with a 431. h11 alone enforces that limit only while the
    block is incomplete, so a 100 KB header arriving in one read was accepted."""

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:  # still reading a request line and headers
            limit = self.config.h11_max_incomplete_event_size
            limit = DEFAULT_MAX_INCOMPLETE_EVENT_SIZE if limit is None else limit
            pending = self.conn.trailing_data[0] + data
            end = pending.find(b"\r\n\r\n")
            if (len(pending) if end < 0 else end) > limit:
                self.logger.warning("Request header fields too large (over %d bytes).", limit)
                self._refuse(431)
                return
        super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        self._refuse(400)

    def _refuse(self, status: int) -> None:
        self.transport.write(error_response(status, REASONS[status]))
        self.transport.close()
