"""One node against a Citus cluster in the same run: store and search p50/p95 through the API.

    python bench/citus.py [--quick] [--json] [--memories 100000] [--tenants 100] [--requests 200]

Loads N synthetic memories spread over T tenants (random 384-d unit vectors, pseudo-word texts;
the memory table's indexes dropped meanwhile and built after the rows) into a fresh database on
the embedded single server and into one on the local Citus cluster (`bin/citus start`: a
coordinator and two workers on this machine, distributed by `manage.py citus_distribute` with 32
shards), then sends the same store and search requests to
each through the API (Django's test client in-process: the whole service path, no HTTP server)
for random tenants. Each target runs in a child process of its own (DATABASE_URL differs).
Also records the shard tasks of a tenant's vector query (EXPLAIN's "Task Count"). --quick: 10 k
memories, 50 requests. With --json the last line of stdout is the JSON object; results are
written to bench/results/citus.json (citus_quick.json with --quick).

On one 2-core machine the cluster cannot be faster: its three servers share the cores the single
one has alone, and every request adds the coordinator's planning and a hop to a worker. What it
shows is that overhead per request, and that a tenant's query reaches one shard.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
from support import benchenv
from support.benchdb import log, memory_indexes_dropped

ROOT = benchenv.ROOT
# In-process requests through Django's test client (as bench/request_cost.py).
os.environ["ALLOWED_HOSTS"] = "testserver"
os.environ["SECURE_SSL_REDIRECT"] = "false"
RESULTS = ROOT / "bench" / "results" / "citus.json"
RESULTS_QUICK = ROOT / "bench" / "results" / "citus_quick.json"
DATABASE = "memory_bench_citus"
WORDS = [
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lumen",
    "maple",
    "nectar",
]


def _percentiles(samples: list[float]) -> dict[str, float]:
    ms = np.asarray(samples) * 1000
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
    }


def _text(rng: np.random.Generator, n: int) -> str:
    return f"Note {n}: " + " ".join(rng.choice(WORDS, size=6))


def child(args: argparse.Namespace) -> dict:
    """Runs inside one target's process: load, then time the requests."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from rest_framework.test import APIClient

    from memory_app.db import citus_mode
    from memory_app.models import Memory, Tenant
    from memory_app.services.api_keys import api_key_issue
    from memory_app.text import normalized_hash

    call_command("migrate", verbosity=0)
    if citus_mode():
        with open(os.devnull, "w") as quiet:
            call_command("citus_distribute", shard_count=32, stdout=quiet)
    rng = np.random.default_rng(7)
    tenants = [Tenant.objects.create(name=f"bench {i}", slug=f"bench-{i}") for i in range(args.tenants)]
    started = time.perf_counter()
    build_seconds: dict[str, float] = {}
    connection.ensure_connection()
    # The memory table's indexes built once after the rows (on Citus: on every shard), not row by row.
    with memory_indexes_dropped(connection.connection, log=log, build_seconds=build_seconds):
        batch: list[Memory] = []
        for n in range(args.memories):
            vector = rng.standard_normal(384).astype(np.float32)
            text = _text(rng, n)
            batch.append(
                Memory(
                    tenant=tenants[n % len(tenants)],
                    user_id=f"user-{n % 7}",
                    text=text,
                    text_hash=normalized_hash(text),
                    embedding=vector / np.linalg.norm(vector),
                    embedding_model="all-MiniLM-L6-v2",
                )
            )
            if len(batch) == 2000:
                Memory.objects.bulk_create(batch)
                batch = []
        if batch:
            Memory.objects.bulk_create(batch)
    load_seconds = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    log(f"  loaded {args.memories:,} memories over {args.tenants} tenants in {load_seconds:.0f} s")

    clients = []
    for tenant in tenants:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_issue(tenant=tenant, name='bench').raw_key}")
        clients.append(client)
    # One untimed store and search first: the model's load and the first connections are not a
    # request's cost.
    warm = clients[0].post("/api/v1/memories", {"text": "Warm-up note", "user_id": "user-0"}, format="json")
    assert warm.status_code in (200, 201), warm.content
    clients[0].post("/api/v1/memories/search", {"query": "warm-up"}, format="json")
    store: list[float] = []
    search: list[float] = []
    for i in range(args.requests):
        client = clients[int(rng.integers(len(clients)))]
        body = {
            "text": f"Bench request {i} mentions {' and '.join(rng.choice(WORDS, size=3))}",
            "user_id": "user-1",
        }
        t0 = time.perf_counter()
        response = client.post("/api/v1/memories", body, format="json")
        store.append(time.perf_counter() - t0)
        assert response.status_code in (200, 201), response.content
        query = {"query": " ".join(rng.choice(WORDS, size=3)), "filters": {"user_id": "user-1"}}
        t0 = time.perf_counter()
        response = client.post("/api/v1/memories/search", query, format="json")
        search.append(time.perf_counter() - t0)
        assert response.status_code == 200, response.content

    tasks = None
    if citus_mode():
        vector = "[" + ",".join(["0.05"] * 384) + "]"
        with connection.cursor() as cursor:
            cursor.execute(
                "EXPLAIN SELECT id FROM memory_app_memory WHERE tenant_id = %s AND status = 'active' "
                f"ORDER BY embedding <=> '{vector}'::halfvec LIMIT 10",
                [tenants[0].pk],
            )
            plan = "\n".join(row[0] for row in cursor.fetchall())
        tasks = int(plan.split("Task Count: ")[1].split()[0])
    return {
        "load_seconds": round(load_seconds, 1),
        "index_build_seconds": build_seconds,
        "store": _percentiles(store),
        "search": _percentiles(search),
        "tenant_query_shard_tasks": tasks,
    }


def run_target(name: str, env: dict[str, str], args: argparse.Namespace) -> dict:
    log(f"==> {name}")
    command = [
        sys.executable, __file__, "--child", "--memories", str(args.memories),
        "--tenants", str(args.tenants), "--requests", str(args.requests),
    ]  # fmt: skip
    out = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--memories", type=int)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--requests", type=int)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.memories = args.memories or (10_000 if args.quick else 100_000)
    args.requests = args.requests or (50 if args.quick else 200)
    if args.child:
        print(json.dumps(child(args)))
        return

    from project import citus_cluster

    root = ROOT / "var" / "citus"
    cluster = citus_cluster.start(
        root, port=citus_cluster.DEFAULT_PORT, workers=citus_cluster.DEFAULT_WORKERS
    )
    citus_cluster.drop_database(cluster, DATABASE)
    citus_cluster.create_database(cluster, DATABASE)

    import django

    django.setup()
    from support.benchdb import use_database

    use_database(DATABASE, fresh=True)  # the single server's bench database, empty
    from django.conf import settings

    single = settings.DATABASES["default"]
    from urllib.parse import quote

    single_url = (
        f"postgres://{single['USER']}@{quote(str(single['HOST']), safe='')}:{single['PORT']}/{DATABASE}"
    )
    report = {
        "command": "python bench/citus.py" + (" --quick" if args.quick else ""),
        "memories": args.memories,
        "tenants": args.tenants,
        "requests": args.requests,
        "workers": len(cluster) - 1,
        "shards": 32,
        "load_average": os.getloadavg()[0],
        "single": run_target("single node", {"DATABASE_URL": single_url}, args),
        "citus": run_target("citus", {"DATABASE_URL": citus_cluster.url(cluster[0], DATABASE)}, args),
    }
    for operation in ("store", "search"):
        report[f"{operation}_p50_ratio"] = round(
            report["citus"][operation]["p50_ms"] / report["single"][operation]["p50_ms"], 2
        )
    benchenv.write_results(RESULTS_QUICK if args.quick else RESULTS, report, print_json=args.json)
    log(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
