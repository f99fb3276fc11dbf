"""The service as it is served, for benchmarks: gunicorn with project/gunicorn.conf.py (the REST
API) and bin/serve-mcp (uvicorn: the MCP server's streamable HTTP), each a process on a free port
of 127.0.0.1 over a bench database, production settings (DEBUG off, tasks inline, local model)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from urllib.parse import quote

from .benchenv import ROOT


def database_url(name: str) -> str:
    """The URL of bench database `name` on the server the project uses."""
    from django.conf import settings

    config = settings.DATABASES["default"]
    if settings.DATABASE_URL:  # the same server and credentials, the bench database
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(settings.DATABASE_URL)
        return urlunsplit(parts._replace(path=f"/{name}"))
    host = quote(str(config["HOST"]), safe="")
    return f"postgres://{config['USER']}@{host}:{config['PORT']}/{name}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(url: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "ENV_FILE": "",
        "DEBUG": "false",
        "SECRET_KEY": "bench-only-secret-key",
        "ALLOWED_HOSTS": "127.0.0.1",
        # Plain HTTP on the loopback, as behind a TLS-terminating proxy: no redirect to https.
        "SECURE_SSL_REDIRECT": "false",
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": "",
        "LOG_LEVEL": "warning",
        "EMBEDDING_PROVIDER": "local",
        **extra,
    }


def start_gunicorn(
    env: dict[str, str], port: int, *, app: str = "project.wsgi:application"
) -> subprocess.Popen[bytes]:
    """`app` from the project, or from bench/ (bench/support/profiled_wsgi.py)."""
    command = [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "project" / "gunicorn.conf.py")]
    command += ["--bind", f"127.0.0.1:{port}", app]
    if not app.startswith("project."):
        command += ["--pythonpath", str(ROOT / "bench")]
    return subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)


def start_mcp(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    """bin/serve-mcp, as bin/serve and docker-compose run it."""
    env = {**env, "MCP_HOST": "127.0.0.1", "MCP_PORT": str(port)}
    return subprocess.Popen(
        ["bash", str(ROOT / "bin" / "serve-mcp")], cwd=ROOT, env=env, start_new_session=True
    )


def stop_server(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)


async def wait_ready(
    base: str, server: subprocess.Popen[bytes], *, timeout: float = 180.0, path: str = "/api/v1/health"
) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise SystemExit(f"{server.args} exited with status {server.returncode}")
            try:
                if (await client.get(f"{base}{path}")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.25)
    raise SystemExit(f"{server.args} did not answer {path} in time")
