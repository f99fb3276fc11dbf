"""Requests the HTTP servers refuse before Django sees them get the service's JSON error body with
the right status, from gunicorn (project/gunicorn.conf.py, the REST API) and from uvicorn
(bin/serve-mcp, the MCP server): raw bytes on a socket, as a broken or hostile client sends them."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, suppress
from urllib.parse import urlsplit

import pytest

from tests.support.mcp_helpers import gunicorn_process, mcp_process

NUL_IN_REQUEST_LINE = b"GET /api/v1/\x00health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
HUGE_HEADER = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: " + b"a" * 100_000 + b"\r\n\r\n"
GOOD = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def exchange(base: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Sends raw bytes, reads until the server closes (no half-close: uvicorn takes it for a
    disconnect): (status, headers, body)."""
    parts = urlsplit(base)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        # a server may answer and close before it read the whole header block
        with suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in header_lines)}
    return int(status_line.split()[1]), headers, body


@pytest.fixture(params=["gunicorn", "uvicorn"], scope="module")
def served(request: pytest.FixtureRequest, django_db_setup: None) -> Iterator[str]:
    """The server process on the test database (django_db_setup: its name is known)."""
    starts: dict[str, Callable[[], AbstractContextManager[str]]] = {
        "gunicorn": gunicorn_process,
        "uvicorn": mcp_process,
    }
    with starts[request.param]() as base:
        yield base


@pytest.mark.parametrize(
    ("request_bytes", "status", "code"),
    [(NUL_IN_REQUEST_LINE, 400, "invalid"), (HUGE_HEADER, 431, "headers_too_large")],
    ids=["nul-in-request-line", "100-kb-header"],
)
def test_a_request_the_server_refuses_gets_the_json_error_body(
    served: str, request_bytes: bytes, status: int, code: str
):
    answered, headers, body = exchange(served, request_bytes)
    assert answered == status
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    error = json.loads(body)["error"]
    assert error["code"] == code and error["message"] and error["fields"] == {}


def test_a_well_formed_request_is_still_answered_by_django(served: str):
    answered, _headers, body = exchange(served, GOOD)
    assert answered == 200 and json.loads(body) == {"status": "ok"}
