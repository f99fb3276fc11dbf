"""An agent's first calls after start-up: how long `bin/serve` takes to say ready, and how long the
first store, search and context calls take after that, over REST and MCP.

    python bench/first_call.py [--quick] [--json] [--rounds N]

Each round starts from a fresh state: a new bench database (migrated, one tenant and key, no
memories) and new server processes. `bin/serve` runs as a user runs it (bin/setup, migrate,
runserver and bin/serve-mcp on free ports, production settings); the clock starts when it is
launched and its "==> ready" line is the ready time. Right after it: the first `POST
/api/v1/memories`, then a search and a context call (httpx), then the first MCP tool call over
streamable HTTP (the SDK's own client). Then the stdio server as a desktop agent starts it (`manage.py
mcp_server --tenant SLUG` under the SDK's stdio client): the time to its `initialize` reply, and the
first tool call after that reply. Targets: the first store within 2 s of ready, the first stdio
tool call within 2 s of `initialize`. Results in bench/results/first_call.json (first_call_quick.json
with --quick: one round instead of three); with --json the last stdout line is the JSON.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import django
from support import benchenv
from support.benchdb import log, use_database
from support.served import database_url, free_port, server_env

ROOT = benchenv.ROOT
# bench/mcp.py would shadow the SDK's `mcp` package with bench/ on sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
DATABASE = "bench_first_call"
SLUG = "bench-first-call"
TARGET_SECONDS = 2.0
READY_TIMEOUT = 900.0


def fresh_tenant() -> str:
    """A fresh database with one tenant; its API key."""
    from django.db import connections

    from memory_app.services.api_keys import api_key_issue, tenant_create

    use_database(DATABASE, fresh=True, migrate=True)
    key = api_key_issue(tenant=tenant_create(name="bench first call", slug=SLUG), name="bench").raw_key
    connections.close_all()
    return key


class Serve:
    """`bin/serve` in its own session, its output drained by a thread that notes the ready line."""

    def __init__(self, env: dict[str, str]) -> None:
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            ["bash", str(ROOT / "bin" / "serve")],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.ready = threading.Event()
        self.ready_after = 0.0
        self.tail: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.decode(errors="replace").rstrip()
            self.tail = [*self.tail[-40:], line]
            if line.startswith("==> ready") and not self.ready.is_set():
                self.ready_after = time.monotonic() - self.started
                self.ready.set()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while not self.ready.wait(0.2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("bin/serve did not get ready:\n" + "\n".join(self.tail))

    def stop(self) -> None:
        """SIGTERM to bin/serve, whose trap stops both servers (each in its own process group)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)


def timed(call: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def rest_calls(api: str, key: str) -> dict[str, float]:
    import httpx

    with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
        seconds: dict[str, float] = {}
        memory = {"text": "User is allergic to peanuts", "user_id": "u1"}
        seconds["first_store_s"], stored = timed(lambda: http.post("/api/v1/memories", json=memory))
        assert stored.status_code == 201, stored.text
        search = {"query": "peanuts", "filters": {"user_id": "u1"}}
        seconds["first_search_s"], found = timed(lambda: http.post("/api/v1/memories/search", json=search))
        assert found.status_code == 200 and found.json()["results"], found.text
        context = {"query": "what can I cook?", "filters": {"user_id": "u1"}}
        seconds["first_context_s"], answered = timed(lambda: http.post("/api/v1/context", json=context))
        assert answered.status_code == 200, answered.text
    return seconds


async def mcp_http_call(url: str, key: str) -> float:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
    async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client:
        start = time.perf_counter()
        result = await client.call_tool("search_memories", {"query": "peanuts", "user_id": "u1"})
        assert not result.is_error, result.content
        return time.perf_counter() - start


async def mcp_stdio_calls(env: dict[str, str]) -> dict[str, float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_server", "--tenant", SLUG], env=env, cwd=str(ROOT)
    )
    start = time.perf_counter()
    async with Client(params, read_timeout_seconds=300) as client:
        initialized = time.perf_counter()
        memories = {"memories": [{"text": "User prefers morning workouts", "user_id": "u1"}]}
        result = await client.call_tool("store_memories", memories)
        stored = time.perf_counter()
        assert not result.is_error, result.content
        result = await client.call_tool("search_memories", {"query": "workouts", "user_id": "u1"})
        assert not result.is_error, result.content
        searched = time.perf_counter()
    return {
        "stdio_initialize_s": initialized - start,
        "stdio_first_call_s": stored - initialized,
        "stdio_second_call_s": searched - stored,
    }


def one_round(number: int) -> dict[str, float]:
    import anyio

    key = fresh_tenant()
    api_port, mcp_port = free_port(), free_port()
    env = server_env(
        database_url(DATABASE), BIND=f"127.0.0.1:{api_port}", MCP_PORT=str(mcp_port), MCP_HOST="127.0.0.1"
    )
    log(f"round {number}: bin/serve on :{api_port} (API) and :{mcp_port} (MCP), a fresh database")
    serve = Serve(env)
    try:
        serve.wait_ready()
        figures = {"serve_to_ready_s": serve.ready_after}
        figures |= rest_calls(f"http://127.0.0.1:{api_port}", key)
        figures["mcp_http_first_call_s"] = anyio.run(mcp_http_call, f"http://127.0.0.1:{mcp_port}/mcp", key)
    finally:
        serve.stop()
    figures |= anyio.run(mcp_stdio_calls, env)
    rounded = {name: round(value, 3) for name, value in figures.items()}
    log(f"round {number}: {rounded}")
    return rounded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round instead of three")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rounds", type=int, default=0)
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)

    django.setup()
    runs = [one_round(number) for number in range(1, rounds + 1)]
    worst = {name: max(run[name] for run in runs) for name in runs[0]}
    report = {
        "benchmark": "first_call",
        "quick": args.quick,
        "rounds": rounds,
        "runs": runs,
        "worst": worst,
        "target_seconds": TARGET_SECONDS,
        "met": worst["first_store_s"] <= TARGET_SECONDS and worst["stdio_first_call_s"] <= TARGET_SECONDS,
        "served": "bin/serve (runserver + bin/serve-mcp), production settings, a fresh bench database",
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "command": "python bench/first_call.py" + (" --quick" if args.quick else ""),
    }
    name = "first_call_quick.json" if args.quick else "first_call.json"
    benchenv.write_results(ROOT / "bench" / "results" / name, report, print_json=args.json)
    if not args.json:
        log(f"worst of {rounds}: {worst}; met: {report['met']}")


if __name__ == "__main__":
    main()
