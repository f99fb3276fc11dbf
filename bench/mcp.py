"""What MCP adds to a search: `search_memories` over streamable HTTP vs the same REST call.

    python bench/mcp.py [--quick] [--json] [--calls N] [--memories N]

The service as it is served (bench/support/served.py): the REST API on gunicorn (project/gunicorn.conf.py,
gthread) and the MCP server on bin/serve-mcp (uvicorn, project.asgi), both on one bench database
holding one user's memories, as bin/serve and docker-compose run them. The same search body goes
to `POST /api/v1/memories/search` on gunicorn (httpx, keep-alive) and to the MCP tool on the MCP
process (the SDK's own client, stateless JSON responses), calls interleaved so load drifts hit both
alike. Reports p50/p95 of each and the p50 overhead (median of
the paired differences, and difference of the medians). Target: overhead <= 5 ms p50. Results in
bench/results/mcp.json (mcp_quick.json with --quick); with --json the last stdout line is the JSON.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import django
from support import benchenv
from support.benchdb import log, use_database
from support.served import (
    database_url,
    free_port,
    server_env,
    start_gunicorn,
    start_mcp,
    stop_server,
    wait_ready,
)

ROOT = benchenv.ROOT
# This file is bench/mcp.py: with bench/ on sys.path, `import mcp` would find it instead of the SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
QUERIES = [
    "what does the user eat",
    "workout schedule",
    "family and pets",
    "where does the user live",
    "favourite music",
    "health goals",
    "travel plans",
    "work and colleagues",
]
TOPICS = ["diet", "sport", "family", "home", "music", "health", "travel", "work"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def seed(memories: int) -> str:
    from memory_app.models import Tenant
    from memory_app.overrides import StoreOverrides
    from memory_app.services.api_keys import api_key_issue
    from memory_app.services.store.types import MemoryInput
    from memory_app.services.store.write import memory_store

    Tenant.objects.filter(slug="bench-mcp").delete()
    tenant = Tenant.objects.create(name="bench mcp", slug="bench-mcp")
    items = [
        MemoryInput(text=f"User note {i} about {TOPICS[i % len(TOPICS)]}: detail {i * 7 % 101}", user_id="u1")
        for i in range(memories)
    ]
    for start in range(0, len(items), 100):
        memory_store(
            tenant=tenant, items=items[start : start + 100], options=StoreOverrides(deduplicate=False)
        )
    return api_key_issue(tenant=tenant, name="bench").raw_key


async def measure(rest_base: str, mcp_base: str, key: str, calls: int, warmup: int) -> dict[str, list[float]]:
    import httpx
    import httpx2
    from jsonschema.exceptions import best_match
    from jsonschema.validators import validator_for
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"}
    rest_ms: list[float] = []
    mcp_ms: list[float] = []
    transport = streamable_http_client(
        f"{mcp_base}/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=60)
    )
    async with (
        httpx.AsyncClient(base_url=rest_base, headers=headers, timeout=60) as rest,
        Client(transport) as mcp,
    ):
        for i in range(warmup + calls):
            body = {"query": QUERIES[i % len(QUERIES)], "limit": 10, "filters": {"user_id": "u1"}}
            start = time.perf_counter()
            response = await rest.post("/api/v1/memories/search", json=body)
            rest_time = (time.perf_counter() - start) * 1000
            assert response.status_code == 200, response.text
            start = time.perf_counter()
            result = await mcp.call_tool("search_memories", body)
            mcp_time = (time.perf_counter() - start) * 1000
            assert not result.is_error, result.content
            assert len(result.structured_content["results"]) == len(response.json()["results"])
            if i >= warmup:
                rest_ms.append(rest_time)
                mcp_ms.append(mcp_time)
        # Part of the MCP time was the SDK client's own check of every result against the tool's
        # output schema (jsonschema), timed apart on the last result. The tools now return compact
        # results without an output schema: nothing is checked, and this reports 0.
        schema = next(t.output_schema for t in (await mcp.list_tools()).tools if t.name == "search_memories")
        validate_ms = [0.0]
        for _ in range(50 if schema else 0):
            validator = validator_for(schema)(schema)
            start = time.perf_counter()
            best_match(validator.iter_errors(result.structured_content))
            validate_ms.append((time.perf_counter() - start) * 1000)
    return {"rest": rest_ms, "mcp": mcp_ms, "client_validation": validate_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--calls", type=int, default=0)
    parser.add_argument("--memories", type=int, default=0)
    args = parser.parse_args()
    calls = args.calls or (100 if args.quick else 400)
    memories = args.memories or (200 if args.quick else 1000)

    django.setup()
    import anyio

    use_database("bench_mcp", migrate=True)
    log(f"storing {memories} memories of one user")
    key = seed(memories)
    from django.db import connections

    connections.close_all()
    # one process each, as the defaults of bin/serve-mcp (MCP_WORKERS=1) and a small web
    env = server_env(database_url("bench_mcp"), WEB_CONCURRENCY="1", GUNICORN_ACCESS_LOG="")
    rest_port, mcp_port = free_port(), free_port()
    rest_base, mcp_base = f"http://127.0.0.1:{rest_port}", f"http://127.0.0.1:{mcp_port}"
    servers = [start_gunicorn(env, rest_port), start_mcp(env, mcp_port)]
    try:
        anyio.run(wait_ready, rest_base, servers[0])
        anyio.run(wait_ready, mcp_base, servers[1])
        log(f"{calls} interleaved searches: REST on gunicorn {rest_base}, MCP on bin/serve-mcp {mcp_base}")
        times = anyio.run(measure, rest_base, mcp_base, key, calls, 20)
    finally:
        for server in servers:
            stop_server(server)

    validation_p50 = round(statistics.median(times.pop("client_validation")), 2)
    paired = [m - r for m, r in zip(times["mcp"], times["rest"], strict=True)]
    summary = {
        name: {"p50_ms": round(percentile(v, 0.5), 2), "p95_ms": round(percentile(v, 0.95), 2)}
        for name, v in times.items()
    }
    overhead = round(statistics.median(paired), 2)
    report = {
        "benchmark": "mcp",
        "quick": args.quick,
        "calls": calls,
        "memories": memories,
        "rest_search": summary["rest"],
        "mcp_search": summary["mcp"],
        "overhead_p50_ms": overhead,
        "overhead_p50_of_medians_ms": round(summary["mcp"]["p50_ms"] - summary["rest"]["p50_ms"], 2),
        "client_output_validation_p50_ms": validation_p50,
        "target_overhead_p50_ms": 5.0,
        "met": overhead <= 5.0,
        "served": "REST: gunicorn gthread, 1 worker x 4 threads; MCP: bin/serve-mcp (uvicorn, 1 worker)",
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "command": "python bench/mcp.py" + (" --quick" if args.quick else ""),
    }
    log(
        f"REST p50 {summary['rest']['p50_ms']} ms, MCP p50 {summary['mcp']['p50_ms']} ms, "
        f"overhead p50 {overhead} ms, of which the SDK client's output-schema check {validation_p50} ms "
        f"(load {report['load_average']})"
    )
    name = "mcp_quick.json" if args.quick else "mcp.json"
    benchenv.write_results(ROOT / "bench" / "results" / name, report, print_json=args.json)


if __name__ == "__main__":
    main()
