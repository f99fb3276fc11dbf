"""Drives the MCP server with the SDK's own client, over stdio (a `manage.py mcp_server` subprocess
on the test database) and over streamable HTTP (uvicorn serving project.asgi's app in a thread)."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx2
import uvicorn
from django.conf import settings
from django.db import connection
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memory_app.mcp.tools import TOOLS

TOOL_NAMES = {spec.name for spec in TOOLS}
T = TypeVar("T")
ROOT = Path(settings.BASE_DIR)


def stdio_client(tenant_slug: str) -> Client:
    """A client that starts `manage.py mcp_server --tenant SLUG` against this test run's database."""
    db = connection.settings_dict
    url = f"postgresql://{quote(db['USER'] or '')}@{quote(db['HOST'] or '', safe='')}/{db['NAME']}"
    if db.get("PORT"):
        url = url.replace(f"/{db['NAME']}", f":{db['PORT']}/{db['NAME']}")
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "SECRET_KEY": "test-only-secret-key",
        "ENV_FILE": "",
        "LOG_LEVEL": "warning",
        "PGVECTOR_CHECK": "false",
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_server", "--tenant", tenant_slug],
        env=env,
        cwd=str(ROOT),
    )
    return Client(params, read_timeout_seconds=120)


def http_client(url: str, raw_key: str) -> Client:
    transport = streamable_http_client(
        url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {raw_key}"}, timeout=60)
    )
    return Client(transport, read_timeout_seconds=60)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def asgi_server() -> Iterator[str]:
    """project.asgi's application (Django + /mcp) under uvicorn in a thread; yields the base URL."""
    from django.core.asgi import get_asgi_application

    from memory_app.mcp.http import with_mcp

    port = _free_port()
    config = uvicorn.Config(
        with_mcp(get_asgi_application()), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def in_thread(query: Callable[[], T]) -> Callable[[], T]:
    """`query` for a worker thread: the thread's own database connection is closed afterwards, so
    none is left open when the test database is flushed or dropped."""

    def run() -> T:
        try:
            return query()
        finally:
            connection.close()

    return run


def data(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def error_of(result: Any) -> dict[str, Any]:
    """The API's error body carried by a failed tool call."""
    assert result.is_error
    text = result.content[0].text
    return json.loads(text.split(" ", 2)[2])["error"]
