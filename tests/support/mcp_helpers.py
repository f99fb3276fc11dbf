"""Drives the MCP server with the SDK's own client, over stdio (a `manage.py mcp_server` subprocess
on the test database) and over streamable HTTP (bin/serve-mcp, the served uvicorn process)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import httpx2
from django.conf import settings
from django.db import connection
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memory_app.mcp.tools import TOOLS

TOOL_NAMES = {spec.name for spec in TOOLS}
T = TypeVar("T")
ROOT = Path(settings.BASE_DIR)


def served_env() -> dict[str, str]:
    """The environment of a server process (`manage.py mcp_server`, bin/serve-mcp, gunicorn) on this
    test run's database, with production settings (DEBUG off, tasks inline)."""
    db = connection.settings_dict
    url = f"postgresql://{quote(db['USER'] or '')}@{quote(db['HOST'] or '', safe='')}/{db['NAME']}"
    if db.get("PORT"):
        url = url.replace(f"/{db['NAME']}", f":{db['PORT']}/{db['NAME']}")
    return {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "SECRET_KEY": "test-only-secret-key",
        "ENV_FILE": "",
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "CELERY_BROKER_URL": "",
        "LOG_LEVEL": "warning",
        "PGVECTOR_CHECK": "false",
        # Without the start-up check, a Citus coordinator is named (project/citus_backend).
        "DATABASE_CITUS": "true" if getattr(connection.features, "is_citus", False) else "false",
    }


def stdio_client(tenant_slug: str) -> Client:
    """A client that starts `manage.py mcp_server --tenant SLUG` against this test run's database."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_server", "--tenant", tenant_slug],
        env=served_env(),
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
def server_process(command: list[str], env: dict[str, str]) -> Iterator[str]:
    """Starts a server the way bin/serve and docker-compose do, on a free port of 127.0.0.1 (`{port}`
    in `command` and `env` values), waits for its liveness answer; yields the base URL."""
    port = str(_free_port())
    command = [part.replace("{port}", port) for part in command]
    env = {key: value.replace("{port}", port) for key, value in env.items()}
    process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, f"{command[0]} exited with status {process.returncode}"
            assert time.monotonic() < deadline, f"{command} did not answer /api/v1/health"
            try:
                if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def mcp_process() -> AbstractContextManager[str]:
    """bin/serve-mcp (project.asgi under uvicorn: /mcp, and the REST API) on this test database."""
    env = {**served_env(), "MCP_HOST": "127.0.0.1", "MCP_PORT": "{port}"}
    return server_process(["bash", str(ROOT / "bin" / "serve-mcp")], env)


def gunicorn_process() -> AbstractContextManager[str]:
    """The REST API's gunicorn with project/gunicorn.conf.py, one small worker, on this test database."""
    env = {**served_env(), "WEB_CONCURRENCY": "1", "WEB_THREADS": "2", "EMBEDDING_WARMUP": "false"}
    env |= {"GUNICORN_ACCESS_LOG": "", "GUNICORN_BIND": "127.0.0.1:{port}"}
    command = [sys.executable, "-m", "gunicorn", "-c", "project/gunicorn.conf.py", "project.wsgi:application"]
    return server_process(command, env)


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
