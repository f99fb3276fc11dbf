"""The service under concurrent load: gunicorn on the embedded database, driven from 127.0.0.1.

    python bench/load.py [--quick] [--json] [--rows N] [--users U] [--clients C] [--duration S]
                         [--workers W] [--threads T] [--batching on|off] [--max-requests N]
                         [--batch-wait-ms MS] [--profile DIR] [--citus]
    python bench/load.py --batcher [--quick] [--json]   # the micro-batcher alone, in-process
    python bench/load.py --quick --profile DIR          # CPU profile of the served requests

One tenant holds --rows memories over --users users (100,000 over 100 for the full run; 10,000 over
20 with --quick) in a database of its own (`memory_bench_load_<rows>`, loaded once with COPY and
kept; every run first removes what earlier runs stored and empties the embedding cache). gunicorn
starts with project/gunicorn.conf.py (gthread) on a free port of 127.0.0.1, with the local model,
inline tasks and DEBUG off. C closed-loop clients (8) then send, for --duration seconds (60; 20
with --quick) after a short warm-up, a seeded mix of stores (30 %), searches (50 %) and
`/context/all` (20 %) for random users, each with a text no earlier request sent (every request
pays one local-model embedding: no cache hit helps). The run stops by itself at the deadline or
after --max-requests. Afterwards every acknowledged store (2xx with a memory_id) is looked up in the
database: `acknowledged_missing` counts those whose memory is gone or holds another text.

Why a bounded asyncio client (httpx) and not locust: locust patches the whole process with gevent,
and this process also loads and checks the database with psycopg; the asyncio client needs no
patching, gives exact percentiles (locust rounds them to buckets), caps time and requests exactly,
and keeps the acknowledged stores for the check in-process. It costs ~1 ms of CPU per request on
the same cores as the server, which the figures include.

Reports throughput, p50/p95/p99 per operation, errors (non-2xx or transport failures), the load
average before and after, and the server settings. Results: bench/results/load.json
(load_quick.json with --quick); with --json the last line of stdout is the same object.

--citus: the same run against the local Citus cluster (project/citus_cluster.py, as `bin/citus
start`: a coordinator and two workers on this machine; CITUS_PORT moves it off 8160). The bench
database is created on every node, migrated and distributed (`manage.py citus_distribute`, 32
shards, as bench/citus.py) before the rows are copied through the coordinator; gunicorn's
DATABASE_URL points at the coordinator, and the database CPU is the three servers'. Results:
bench/results/load_citus.json (load_citus_quick.json).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import random
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import django
import numpy as np
from support import benchenv, load_data, proc_cpu
from support.benchdb import log, use_database
from support.served import database_url, free_port, server_env, start_gunicorn, stop_server, wait_ready

from project import citus_cluster

ROOT = benchenv.ROOT
RESULTS = ROOT / "bench" / "results" / "load.json"
RESULTS_QUICK = ROOT / "bench" / "results" / "load_quick.json"
CITUS_RESULTS = ROOT / "bench" / "results" / "load_citus.json"
CITUS_RESULTS_QUICK = ROOT / "bench" / "results" / "load_citus_quick.json"
MIX = (("store", 0.3), ("search", 0.5), ("context_all", 0.2))
STORE_TEMPLATE = "{name} mentioned that {sentence}."
QUERY_TEMPLATE = "{sentence} ({name})"


@dataclass
class Sample:
    op: str
    ms: float
    ok: bool
    measured: bool


@dataclass
class Run:
    samples: list[Sample] = field(default_factory=list)
    acknowledged: list[tuple[str, str, int, str]] = field(default_factory=list)  # user, text, id, outcome
    error_samples: list[str] = field(default_factory=list)
    cpu_start: dict[str, float] | None = None
    cpu_end: dict[str, float] | None = None
    worker_start_cpu: list[float] = field(default_factory=list)

    def cpu_ms_per_request(self, requests: int) -> dict[str, float]:
        if not (self.cpu_start and self.cpu_end and requests):
            return {}
        used = {k: self.cpu_end[k] - self.cpu_start[k] for k in self.cpu_start}
        out = {k: round(v * 1000 / requests, 1) for k, v in used.items()}
        out["total"] = round(sum(used.values()) * 1000 / requests, 1)
        return out


def prepare(rows: int, users: int, cluster: list[citus_cluster.Node] | None = None):  # type: ignore[no-untyped-def]
    """The loaded tenant and its database's name; `cluster` (Citus nodes): the database on every
    node, distributed before the COPY."""
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.exceptions import InconsistentMigrationHistory

    from memory_app.models import Tenant

    name = load_data.database_name(rows)
    if cluster:
        citus_cluster.create_database(cluster, name)
    use_database(name)
    try:
        call_command("migrate", verbosity=0)
        with connection.cursor() as cur:
            max_id = load_data.loaded_max_id(cur)
    except InconsistentMigrationHistory:  # migrations were renumbered since the load: load again
        max_id = None
    if max_id is None:
        log(f"loading {rows:,} rows into {name} (kept for later runs)")
        if cluster:
            citus_cluster.drop_database(cluster, name)
            citus_cluster.create_database(cluster, name)
            use_database(name, migrate=True)
            call_command("citus_distribute", shard_count=32, stdout=io.StringIO())
        else:
            use_database(name, fresh=True, migrate=True)
    tenant, _ = Tenant.objects.get_or_create(slug=load_data.TENANT_SLUG, defaults={"name": "bench load"})
    if max_id is None:
        load_data.load(rows, users, tenant.pk, log=log)
        with connection.cursor() as cur:
            max_id = load_data.loaded_max_id(cur)
    load_data.reset(tenant.pk, max_id)
    return tenant, name


def cpu_snapshot(server_pid: int, postmasters: list[int]) -> dict[str, float]:
    """CPU seconds used so far by gunicorn (its process group), PostgreSQL (the processes of the
    embedded server, or of every Citus node) and this client process.

    A process that ended between the two snapshots would take its CPU with it: a PostgreSQL backend
    closed when its connection reached CONN_MAX_AGE, a parallel query worker, a recycled gunicorn
    worker. Their parent (the postmaster, gunicorn's arbiter) has reaped them, so its children's
    CPU (cutime + cstime) counts them."""
    stats = proc_cpu.proc_stats()
    snapshot = {
        "server": sum(cpu for _pid, _ppid, group, cpu, _reaped in stats if group == server_pid)
        + sum(reaped for pid, _ppid, _group, _cpu, reaped in stats if pid == server_pid),
        "client": time.process_time(),
    }
    if postmasters:
        snapshot["database"] = proc_cpu.database_cpu(postmasters, stats)
    return snapshot


def worker_start_cpu(server_pid: int) -> list[float]:
    """CPU seconds each gunicorn worker used before it answered (Django, torch, the model's
    warm-up): what every recycled worker costs again (GUNICORN_MAX_REQUESTS)."""
    workers = [cpu for pid, ppid, _group, cpu, _reaped in proc_cpu.proc_stats() if ppid == server_pid]
    return sorted(round(cpu, 2) for cpu in workers)


def postmaster_pids(cluster: list[citus_cluster.Node] | None) -> list[int]:
    """The postmasters of the Citus nodes, or of the embedded server (none for another server)."""
    if cluster:
        return proc_cpu.postmaster_pids(node.data for node in cluster)
    return proc_cpu.embedded_postmasters()


def start_cluster() -> list[citus_cluster.Node]:
    """The local Citus cluster started (`bin/citus start`), DATABASE_URL set to its coordinator
    before Django reads its settings (its `memory` database: the bench database may not exist yet)."""
    cluster = citus_cluster.start(
        ROOT / "var" / "citus",
        port=int(os.environ.get("CITUS_PORT", citus_cluster.DEFAULT_PORT)),
        workers=citus_cluster.DEFAULT_WORKERS,
    )
    os.environ["DATABASE_URL"] = citus_cluster.url(cluster[0])
    return cluster


def start_server(args: argparse.Namespace, url: str, port: int) -> subprocess.Popen[bytes]:
    env = server_env(
        url,
        EMBEDDING_LOCAL_BATCHING="true" if args.batching == "on" else "false",
        WEB_CONCURRENCY=str(args.workers),
        WEB_THREADS=str(args.threads),
        GUNICORN_ACCESS_LOG="",
    )
    if args.torch_threads is not None:
        env["EMBEDDING_TORCH_THREADS"] = str(args.torch_threads)
    if args.batch_wait_ms is not None:
        env["EMBEDDING_LOCAL_BATCH_WAIT_MS"] = str(args.batch_wait_ms)
    if args.profile:
        env["LOAD_PROFILE_DIR"] = str(args.profile)
        return start_gunicorn(env, port, app="support.profiled_wsgi:application")
    return start_gunicorn(env, port)


def profile_report(directory: Path, top: int = 40) -> None:
    """The workers' sampled CPU (bench/support/profiled_wsgi.py): the functions with the most CPU,
    inclusive and own, in ms per request served (warm-up included)."""
    from support.cpu_sampler import read_collapsed, summary

    files = sorted(directory.glob("worker-*.collapsed"))
    if not files:
        log(f"no profiles in {directory}")
        return
    served = sum(int(f.stem.rsplit("-", 1)[1]) for f in files)
    total, inclusive, own = summary(read_collapsed(files))
    log(f"sampled CPU {total * 1000 / max(served, 1):.1f} ms per request over {served} requests")
    counts = [tuple(map(int, f.read_text().split())) for f in directory.glob("worker-*.batches")]
    if counts:
        batches, texts = (sum(c[i] for c in counts) for i in (0, 1))
        log(f"embedding micro-batchers of the workers: {texts} texts in {batches} forward passes")
    for title, ranked in (("inclusive", inclusive), ("own", own)):
        log(f"  by {title} CPU, ms per request:")
        for name, cpu in ranked.most_common(top):
            log(f"    {cpu * 1000 / served:8.2f}  {name.replace(str(ROOT) + '/', '')}")


def request_for(op: str, rng: random.Random, users: int, texts) -> tuple[str, dict]:  # type: ignore[no-untyped-def]

    user = load_data.user_id(rng.randrange(users))
    if op == "store":
        return "/api/v1/memories", {"text": texts.next(STORE_TEMPLATE), "user_id": user}
    if op == "search":
        return "/api/v1/memories/search", {
            "query": texts.next(QUERY_TEMPLATE),
            "limit": 10,
            "filters": {"user_id": user},
        }
    return "/api/v1/context/all", {"query": texts.next(QUERY_TEMPLATE), "user_id": user}


async def drive(
    args: argparse.Namespace, base: str, key: str, users: int, run: Run, cpu: Callable[[], dict[str, float]]
) -> float:
    """Warm-up, then the measured window; returns the measured window's length in seconds."""
    import httpx

    texts = load_data.TextSource(seed=args.seed)
    rng = random.Random(args.seed)
    ops, weights = zip(*MIX, strict=True)
    started = time.monotonic()
    measure_from = started + args.warmup
    stop_at = measure_from + args.duration
    budget = {"left": args.max_requests}
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    headers = {"Authorization": f"Bearer {key}"}

    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=30.0) as client:

        async def client_loop() -> None:
            while time.monotonic() < stop_at and budget["left"] > 0:
                budget["left"] -= 1
                op = rng.choices(ops, weights)[0]
                path, body = request_for(op, rng, users, texts)
                sent = time.monotonic()
                try:
                    response = await client.post(path, json=body)
                    ok = 200 <= response.status_code < 300
                    if not ok and len(run.error_samples) < 10:
                        run.error_samples.append(f"{op} {response.status_code}: {response.text[:300]}")
                    if ok and op == "store":
                        reply = response.json()
                        run.acknowledged.append(
                            (body["user_id"], body["text"], reply["memory_id"], reply["outcome"])
                        )
                except httpx.HTTPError as exc:
                    ok = False
                    if len(run.error_samples) < 10:
                        run.error_samples.append(f"{op} {type(exc).__name__}: {exc}")
                done = time.monotonic()
                run.samples.append(Sample(op, (done - sent) * 1000, ok, measured=sent >= measure_from))

        async def cpu_meter() -> None:
            await asyncio.sleep(max(0.0, measure_from - time.monotonic()))
            run.cpu_start = cpu()
            await asyncio.sleep(max(0.0, stop_at - time.monotonic()))
            run.cpu_end = cpu()

        meter = asyncio.create_task(cpu_meter())
        await asyncio.gather(*(client_loop() for _ in range(args.clients)))
        if run.cpu_end is None:  # stopped early (request cap): measure now
            meter.cancel()
            run.cpu_end = cpu()
    return min(time.monotonic(), stop_at) - measure_from


def missing_acknowledged(tenant_id: int, acknowledged: list[tuple[str, str, int, str]]) -> list[int]:
    """Acknowledged stores whose memory is gone, or (created) holds another text."""
    from memory_app.models import Memory

    rows = dict(
        Memory.objects.filter(tenant_id=tenant_id, pk__in=[a[2] for a in acknowledged])
        .exclude(status="deleted")
        .values_list("pk", "text")
    )
    missing = []
    for _user, text, memory_id, outcome in acknowledged:
        if memory_id not in rows or (outcome == "created" and rows[memory_id] != text):
            missing.append(memory_id)
    return missing


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "p99": None}
    return {f"p{q}": round(float(np.percentile(values, q)), 1) for q in (50, 95, 99)}


def per_operation(measured: list[Sample], window: float) -> dict[str, dict]:
    """Requests, errors, rate and latency percentiles of each operation of the mix."""
    per_op = {}
    for op, _weight in MIX:
        mine = [s for s in measured if s.op == op]
        per_op[op] = {
            "requests": len(mine),
            "errors": sum(not s.ok for s in mine),
            "requests_per_second": round(len(mine) / window, 2) if window > 0 else 0.0,
            **{k + "_ms": v for k, v in percentiles([s.ms for s in mine if s.ok]).items()},
        }
    return per_op


def server_settings(args: argparse.Namespace) -> dict:
    return {
        "gunicorn": f"gthread, {args.workers} workers x {args.threads} threads",
        "embedding_batching": args.batching,
        "batch_wait_ms": args.batch_wait_ms if args.batch_wait_ms is not None else 2.0,
        "torch_threads_per_worker": args.torch_threads if args.torch_threads is not None else 1,
    }


def ceilings(cpu: dict[str, float], cores: int) -> dict:
    """The rates the measured CPU per request would allow with every core busy."""
    return {
        "ceiling_requests_per_second": round(cores * 1000 / cpu["total"], 1) if cpu else None,
        "ceiling_without_client": (round(cores * 1000 / (cpu["total"] - cpu["client"]), 1) if cpu else None),
    }


def report(args: argparse.Namespace, run: Run, window: float, missing: list[int], load: dict) -> dict:
    measured = [s for s in run.samples if s.measured]
    per_op = per_operation(measured, window)
    errors = sum(not s.ok for s in run.samples)
    cpu = run.cpu_ms_per_request(len(measured))
    cores = os.cpu_count() or 1
    return {
        "benchmark": "load_citus" if args.citus else "load",
        "quick": args.quick,
        "rows": args.rows,
        "users": args.users,
        "clients": args.clients,
        "duration_seconds": round(window, 2),
        "warmup_seconds": args.warmup,
        "requests": len(measured),
        "requests_per_second": round(len(measured) / window, 2) if window > 0 else 0.0,
        "errors": errors,
        "error_samples": run.error_samples,
        "acknowledged_stores": len(run.acknowledged),
        "acknowledged_missing": len(missing),
        "p50_ms": {op: per_op[op]["p50_ms"] for op in per_op},
        "p95_ms": {op: per_op[op]["p95_ms"] for op in per_op},
        "p99_ms": {op: per_op[op]["p99_ms"] for op in per_op},
        "operations": per_op,
        "server": server_settings(args),
        # CPU per request of gunicorn, PostgreSQL and this client, and the rate those would allow
        # with every core busy and nothing else running: the machine's ceiling for this mix.
        "cpu_ms_per_request": cpu,
        **ceilings(cpu, cores),
        "cpu_count": cores,
        # Each worker's CPU before its first request: the cost of every recycle.
        "worker_start_cpu_seconds": run.worker_start_cpu,
        "load_average": load,
        "target": {"requests_per_second": 50, "p95_ms": 300, "errors": 0, "acknowledged_missing": 0},
    }


def batcher_bench(args: argparse.Namespace) -> None:
    """The micro-batcher alone, in this process: T threads each embedding one text at a time, one
    torch thread, with and without batching; texts per second and CPU ms per text."""
    import threading

    import torch

    from memory_app.embeddings.batching import MicroBatcher
    from memory_app.embeddings.local import local_embed

    torch.set_num_threads(1)
    texts = [f"{sentence} ({i})" for i, sentence in enumerate(load_data.sentences()[:2000])]
    local_embed(["warm-up"])
    per_thread = 10 if args.quick else 40

    def measure(embed, threads: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
        def work(k: int) -> None:
            for j in range(per_thread):
                embed([texts[(k * per_thread + j) % len(texts)]])

        workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        wall, cpu = time.perf_counter(), time.process_time()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        n = threads * per_thread
        return round(n / (time.perf_counter() - wall), 1), round((time.process_time() - cpu) * 1000 / n, 2)

    rows = []
    for threads in (1, 4, 8):
        rate, cpu = measure(local_embed, threads)
        rows.append({"threads": threads, "batching": "off", "texts_per_second": rate, "cpu_ms_per_text": cpu})
        for wait_ms in (0.0, 2.0, 5.0):
            batcher = MicroBatcher(local_embed, wait_seconds=wait_ms / 1000, max_batch=32)
            rate, cpu = measure(batcher.embed, threads)
            rows.append(
                {
                    "threads": threads,
                    "batching": f"wait {wait_ms:g} ms",
                    "texts_per_second": rate,
                    "cpu_ms_per_text": cpu,
                    "mean_batch": round(batcher.texts / max(batcher.batches, 1), 2),
                }
            )
        log(
            f"  threads {threads}: "
            + "; ".join(f"{r['batching']} {r['cpu_ms_per_text']} ms/text" for r in rows[-4:])
        )
    result = {
        "benchmark": "load_batcher",
        "rows": rows,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    benchenv.write_results(ROOT / "bench" / "results" / "load_batcher.json", result, print_json=args.json)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 memories over 20 users, 20 s")
    parser.add_argument("--json", action="store_true", help="last line of stdout: the JSON result")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--users", type=int)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float)
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds sent but not measured")
    parser.add_argument("--max-requests", type=int, default=100_000, help="hard cap on requests sent")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn processes")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per process")
    parser.add_argument("--torch-threads", type=int, help="torch threads per worker (config default: 1)")
    parser.add_argument("--batching", choices=("on", "off"), default="on", help="local-model micro-batching")
    parser.add_argument("--batch-wait-ms", type=float, help="EMBEDDING_LOCAL_BATCH_WAIT_MS (default 2)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--batcher", action="store_true", help="only the micro-batcher, in-process")
    parser.add_argument("--citus", action="store_true", help="against the local Citus cluster (2 workers)")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="sample the server's CPU by Python stack (bench/support/profiled_wsgi.py) into DIR and print "
        "the top functions; the sampler costs CPU too, so no results file is written",
    )
    args = parser.parse_args()
    args.rows = args.rows or (10_000 if args.quick else 100_000)
    args.users = args.users or (20 if args.quick else 100)
    args.duration = args.duration or (20.0 if args.quick else 60.0)

    cluster = start_cluster() if args.citus else None
    django.setup()
    if args.batcher:
        batcher_bench(args)
        return
    from memory_app.services.api_keys import api_key_issue

    tenant, name = prepare(args.rows, args.users, cluster)
    key = api_key_issue(tenant=tenant, name=f"load bench {time.time():.0f}").raw_key
    from django.db import connections

    connections.close_all()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
        for old in args.profile.glob("worker-*.*"):
            old.unlink()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    load = {"before": [round(x, 2) for x in os.getloadavg()]}
    server = start_server(args, database_url(name), port)
    run = Run()
    try:
        asyncio.run(wait_ready(base, server))
        run.worker_start_cpu = worker_start_cpu(server.pid)
        log(
            f"gunicorn ready on {base}; {args.clients} clients, "
            f"{args.warmup:.0f} s warm-up + {args.duration:.0f} s measured"
        )
        postmasters = postmaster_pids(cluster)
        window = asyncio.run(
            drive(args, base, key, args.users, run, lambda: cpu_snapshot(server.pid, postmasters))
        )
    finally:
        stop_server(server)
    load["after"] = [round(x, 2) for x in os.getloadavg()]
    missing = missing_acknowledged(tenant.pk, run.acknowledged)
    result = report(args, run, window, missing, load)
    log(
        f"{result['requests']} requests in {window:.1f} s: {result['requests_per_second']} req/s, "
        f"{result['errors']} errors, {result['acknowledged_stores']} acknowledged stores, "
        f"{result['acknowledged_missing']} missing; load average {load}"
    )
    log(
        f"  CPU ms per request {result['cpu_ms_per_request']}: ceiling on {result['cpu_count']} cores "
        f"{result['ceiling_requests_per_second']} req/s ({result['ceiling_without_client']} without "
        f"the client)"
    )
    log(f"  CPU s before the first request, per worker: {result['worker_start_cpu_seconds']}")
    for op, figures in result["operations"].items():
        log(
            f"  {op:12s} {figures['requests']:6d} req {figures['requests_per_second']:7.2f}/s  "
            f"p50 {figures['p50_ms']} ms  p95 {figures['p95_ms']} ms  p99 {figures['p99_ms']} ms  "
            f"errors {figures['errors']}"
        )
    for sample in run.error_samples:
        log(f"  error: {sample}")
    if args.profile:
        profile_report(args.profile)
        return
    if args.citus:
        result["citus"] = {"workers": len(cluster or []) - 1, "shards": 32}
        benchenv.write_results(
            CITUS_RESULTS_QUICK if args.quick else CITUS_RESULTS, result, print_json=args.json
        )
        return
    benchenv.write_results(RESULTS_QUICK if args.quick else RESULTS, result, print_json=args.json)


if __name__ == "__main__":
    main()
