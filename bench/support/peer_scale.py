"""bench/peer.py's two systems and its measurement in a large scope: this service and mem0, each
through its real API, in-process and over HTTP from its own server.

mem0 in-process is a process of var/peer-venv's Python (bench/peer/mem0_side.py: one JSON command a
line, each call timed inside it); over HTTP it is bench/peer/mem0_server.py under uvicorn, this
service gunicorn with project/gunicorn.conf.py (bench/support/served.py). Over HTTP both are timed by
the same client here (httpx, one keep-alive connection, one request at a time).

A scope of N memories is loaded once per N into a database per system (kept between runs, each
run first removes what earlier runs stored): the same texts and MiniLM vectors
(bench/support/peer_data.py), COPied, since N adds through mem0's API take hours.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sysconfig
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import load_data, peer_data, proc_cpu
from .benchdb import log, use_database
from .benchenv import ROOT
from .served import database_url, free_port, server_env, start_gunicorn, stop_server, wait_ready

if TYPE_CHECKING:
    from memory_app.models import Tenant

PEER_PYTHON = ROOT / "var" / "peer-venv" / "bin" / "python"
SCOPE = "bench-scope"
STORES = ("dedup", "plain", "mem0")
# "ours" is the default search; "ours plain" turns off the grouping of near-duplicate hits, a step
# mem0's search does not take (the corpus repeats each sentence under many names: see peer_data).
SEARCHES = ("ours", "ours plain", "mem0")
# Each runner times one block: seconds of each call, the texts stored or searched in `scope`.
Runner = Callable[[list[str], str], list[float]]


def connection_fields(dbname: str) -> dict[str, Any]:
    from django.conf import settings

    config = settings.DATABASES["default"]
    return {"dbname": dbname, "user": config["USER"], "host": config["HOST"], "port": config["PORT"]}


def mem0_init(dbname: str, process: str) -> dict[str, Any]:
    """The `init` command of bench/peer/mem0_side.py for bench database `dbname` (mem0's history
    in SQLite, a file per `process`)."""
    from memory_app.conf import embeddings_config

    # Per process of this run: two runs side by side never share (or delete) each other's file.
    history = Path(tempfile.gettempdir()) / f"peer-mem0-history-{os.getpid()}-{process}.db"
    history.unlink(missing_ok=True)
    return {
        **connection_fields(dbname),
        "collection": "peer",
        "history_db_path": str(history),
        "torch_threads": embeddings_config().torch_threads,
    }


class Mem0:
    """mem0 in its own process: one JSON command a line."""

    def __init__(self, dbname: str) -> None:
        if not PEER_PYTHON.exists():
            raise SystemExit(f"{PEER_PYTHON} is missing: see bench/peer.py's docstring to install it")
        self.proc = subprocess.Popen(
            [
                str(PEER_PYTHON),
                str(ROOT / "bench" / "peer" / "mem0_side.py"),
                sysconfig.get_paths()["purelib"],
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.use(dbname)

    def use(self, dbname: str) -> None:
        fresh_database(dbname, keep=True)
        self.dbname = dbname
        self.call("init", **mem0_init(dbname, "side"))

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"op": op, **connection_fields(self.dbname), **fields}) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if "error" in answer:
            raise SystemExit(f"mem0 {op}: {answer['error']}")
        return answer

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def fresh_database(name: str, *, keep: bool = False) -> None:
    """Database `name` on the bench server: dropped and created again, or only created if missing."""
    import psycopg

    params = {**connection_fields("postgres")}
    with psycopg.connect(**{k: v for k, v in params.items() if v}, autocommit=True) as conn:
        if not keep:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000, q))


def spread(values: list[float]) -> dict[str, float]:
    return {
        "min": round(min(values), 1),
        "median": round(statistics.median(values), 1),
        "max": round(max(values), 1),
    }


@dataclass
class Texts:
    """Texts to store and queries, each handed out once in a run (so none is a cache hit)."""

    stores: list[str]
    queries: list[str]

    def take(self, kind: str, count: int) -> list[str]:
        pool = self.stores if kind == "store" else self.queries
        if len(pool) < count:
            raise SystemExit(f"out of {kind} texts: raise the count peer_scale.texts() makes")
        taken, pool[:] = pool[:count], pool[count:]
        return taken


def prepare_size(rows: int, mem0: Mem0, *, corpus: peer_data.Corpus) -> Tenant:
    """Both systems' databases holding `rows` memories in SCOPE (loaded when missing, else reset)."""
    from django.core.management import call_command
    from django.db import connection

    from memory_app.models import Tenant

    name = f"memory_bench_peer_{rows}"
    fresh_database(name, keep=True)
    use_database(name)
    call_command("migrate", verbosity=0)
    with connection.cursor() as cur:
        max_id = peer_data.loaded(cur, rows)
    if max_id is None:
        log(f"loading {rows:,} memories into {name} (kept for later runs)")
        use_database(name, fresh=True, migrate=True)
    tenant, _ = Tenant.objects.get_or_create(slug="peer-scale", defaults={"name": "peer scale"})
    if max_id is None:
        peer_data.load_ours(corpus.head(rows), tenant_id=tenant.pk, user_id=SCOPE, log=log)
        with connection.cursor() as cur:
            max_id = peer_data.loaded(cur, rows)
        assert max_id is not None
    load_data.reset(tenant.pk, max_id)

    mem0_name = f"memory_bench_peer_mem0_{rows}"
    fresh_database(mem0_name, keep=True)
    mem0.use(mem0_name)
    if mem0.call("reset")["preloaded"] != rows:
        log(f"loading {rows:,} memories into {mem0_name} (kept for later runs)")
        texts, vectors = corpus.files(rows)
        took = mem0.call("preload", texts=str(texts), vectors=str(vectors), user_id=SCOPE)["seconds"]
        log(f"  mem0: {rows:,} rows loaded in {took:.0f} s")
    return tenant


def store_one_by_one(*, tenant: Tenant, texts: list[str], scope: str, deduplicate: bool) -> list[float]:
    """Seconds of each of this service's stores of `texts`, one a call, into `scope`."""
    from memory_app.overrides import StoreOverrides
    from memory_app.services.store.types import MemoryInput
    from memory_app.services.store.write import memory_store

    options = StoreOverrides(deduplicate=deduplicate)
    seconds = []
    for text in texts:
        t0 = time.perf_counter()
        memory_store(tenant=tenant, items=[MemoryInput(text=text, user_id=scope)], options=options)
        seconds.append(time.perf_counter() - t0)
    return seconds


# Each in-process default search's `stats["phases_ms"]` (where its time went), for scale_phase.
SEARCH_PHASES: list[dict[str, float]] = []
# Per block of in-process default searches ("ours") and mem0's: the CPU each search cost its own
# process (every thread: the model's pass, BM25's) and the embedded PostgreSQL server, in ms:
# on two cores a search that needs more CPU than its time allows waits for a core, whichever
# thread is on its path.
SEARCH_CPU: dict[str, list[dict[str, float]]] = {"ours": [], "mem0": []}


def search_one_by_one(*, tenant: Tenant, queries: list[str], scope: str, grouped: bool = True) -> list[float]:
    from memory_app.selectors.search.options import SearchOptions
    from memory_app.selectors.search.query import SearchFilters, memory_search

    options = None if grouped else SearchOptions(deduplicate=False)
    seconds = []
    cpu, postgres = time.process_time(), _postgres_cpu()
    for query in queries:
        t0 = time.perf_counter()
        result = memory_search(
            tenant=tenant, query=query, filters=SearchFilters(user_id=scope), limit=10, options=options
        )
        seconds.append(time.perf_counter() - t0)
        if grouped:
            SEARCH_PHASES.append(result.stats["phases_ms"])
    if grouped and queries:
        _cpu_per_search("ours", time.process_time() - cpu, postgres, len(queries))
    return seconds


def same_sentence_recall(*, tenant: Tenant, mem0: Mem0, queries: list[str]) -> dict[str, Any]:
    """Each system's recall@10 on the same queries in SCOPE, untimed: the share of the scope's rows
    stating the query's sentence (at most 10 needed; `peer_data.states`) among the texts of its top
    10 (this service's default search: an entry's text is its best member's own)."""
    from memory_app.selectors.search.query import SearchFilters, memory_search

    ours: list[float] = []
    theirs: list[float] = []
    found = mem0.call("search_each", queries=queries, user_id=SCOPE, top_k=10)["texts"]
    for query, mem0_texts in zip(queries, found, strict=True):
        relevant = len(peer_data.stating_rows(tenant.pk, query))
        if not relevant:
            continue
        hits = memory_search(tenant=tenant, query=query, filters=SearchFilters(user_id=SCOPE), limit=10).hits
        for texts, tally in (([hit.text for hit in hits], ours), (mem0_texts, theirs)):
            tally.append(min(sum(peer_data.states(t, query) for t in texts[:10]) / min(10, relevant), 1.0))
    return {
        "ours": round(statistics.mean(ours), 3) if ours else None,
        "mem0": round(statistics.mean(theirs), 3) if theirs else None,
        "queries": len(ours),
    }


def mem0_search(mem0: Mem0, queries: list[str], scope: str) -> list[float]:
    postgres = _postgres_cpu()
    answer = mem0.call("search_each", queries=queries, user_id=scope, top_k=10)
    if queries:
        _cpu_per_search("mem0", answer["cpu"], postgres, len(queries))
    return list(answer["seconds"])


def _postgres_cpu() -> float:
    return proc_cpu.database_cpu(proc_cpu.embedded_postmasters())


def _cpu_per_search(system: str, cpu: float, postgres_before: float, searches: int) -> None:
    SEARCH_CPU[system].append(
        {
            "process": cpu * 1000 / searches,
            "postgres": (_postgres_cpu() - postgres_before) * 1000 / searches,
        }
    )


def medians_by_name(figures: list[dict[str, float]]) -> dict[str, float]:
    """The median of each named figure over `figures` (phases ms, CPU ms; a name a dict lacks, a
    phase a search skipped, counts as 0)."""
    names = list(dict.fromkeys(name for f in figures for name in f))
    return {name: round(statistics.median(f.get(name, 0.0) for f in figures), 2) for name in names}


def in_process_runners(tenant: Tenant, mem0: Mem0) -> dict[str, Runner]:
    return {
        "dedup": lambda texts, scope: store_one_by_one(
            tenant=tenant, texts=texts, scope=scope, deduplicate=True
        ),
        "plain": lambda texts, scope: store_one_by_one(
            tenant=tenant, texts=texts, scope=scope, deduplicate=False
        ),
        "mem0": lambda texts, scope: mem0.call("add_each", texts=texts, user_id=scope)["seconds"],
        "search ours": lambda queries, scope: search_one_by_one(tenant=tenant, queries=queries, scope=scope),
        "search ours plain": lambda queries, scope: search_one_by_one(
            tenant=tenant, queries=queries, scope=scope, grouped=False
        ),
        "search mem0": lambda queries, scope: mem0_search(mem0, queries, scope),
    }


def timed_posts(
    client, url: str, bodies: list[dict[str, Any]], params: dict[str, str] | None = None
) -> list[float]:  # type: ignore[no-untyped-def]
    seconds = []
    for body in bodies:
        t0 = time.perf_counter()
        response = client.post(url, json=body, params=params)
        seconds.append(time.perf_counter() - t0)
        if response.status_code >= 300:
            raise SystemExit(f"POST {url}: {response.status_code} {response.text[:300]}")
    return seconds


def http_runners(client, ours: str, mem0: str) -> dict[str, Runner]:  # type: ignore[no-untyped-def]
    """The same calls as in_process_runners, as HTTP requests to each system's server."""

    def store(texts: list[str], scope: str, params: dict[str, str] | None = None) -> list[float]:
        return timed_posts(
            client, f"{ours}/api/v1/memories", [{"text": t, "user_id": scope} for t in texts], params
        )

    return {
        "dedup": store,
        "plain": lambda texts, scope: store(texts, scope, {"deduplicate": "false"}),
        "mem0": lambda texts, scope: timed_posts(
            client,
            f"{mem0}/memories",
            [{"messages": [{"role": "user", "content": t}], "user_id": scope, "infer": False} for t in texts],
        ),
        "search ours": lambda queries, scope: timed_posts(
            client,
            f"{ours}/api/v1/memories/search",
            [{"query": q, "limit": 10, "filters": {"user_id": scope}} for q in queries],
        ),
        "search ours plain": lambda queries, scope: timed_posts(
            client,
            f"{ours}/api/v1/memories/search",
            [{"query": q, "limit": 10, "deduplicate": False, "filters": {"user_id": scope}} for q in queries],
        ),
        "search mem0": lambda queries, scope: timed_posts(
            client, f"{mem0}/search", [{"query": q, "user_id": scope, "top_k": 10} for q in queries]
        ),
    }


def interleaved(
    runners: dict[str, Runner], texts: Texts, *, reps: int, block: int, new_scope: bool
) -> dict[str, dict[str, Any]]:
    """Per rep, one block of `block` calls per system, the order rotating per rep: stores (into SCOPE,
    or with `new_scope` into a scope of their own each block), then searches in SCOPE. Each figure:
    min / median / max over the reps of the block's p50 and p95, in ms."""
    blocks: dict[str, list[list[float]]] = {}
    for rep in range(reps):
        for kind, systems in (("store", STORES), ("search", () if new_scope else SEARCHES)):
            order = list(systems[rep % len(systems) :] + systems[: rep % len(systems)]) if systems else []
            for system in order:
                name = system if kind == "store" else f"search {system}"
                scope = f"new-{system}-{uuid.uuid4().hex[:8]}" if new_scope else SCOPE
                blocks.setdefault(name, []).append(runners[name](texts.take(kind, block), scope))
    return {
        name: {str(q): spread([pct(b, q) for b in per_rep]) for q in (50, 95)}
        for name, per_rep in blocks.items()
    }


def warm(runners: dict[str, Runner], texts: Texts, *, searches: int = 0) -> None:
    """A few calls of each kind first, in a scope of their own: model, caches, connections. With
    `searches`, each search runner then answers that many more in the measured scope, so the figures
    are a running server's rather than its first minute's: a new process learns a large scope's
    BM25 statistics and which of its words are common as queries name them (an uncached word costs
    a count of up to ~2 ms), per worker process. Every system gets the same warm-up."""
    for name, runner in runners.items():
        runner(texts.take("search" if name.startswith("search") else "store", 3), "warm-up")
    for name, runner in runners.items():
        if name.startswith("search") and searches:
            runner(texts.take("search", searches), SCOPE)


def in_process(tenant: Tenant, mem0: Mem0, texts: Texts, *, reps: int, block: int, new_scope: bool) -> dict:
    from project.warmup import embedding_warmup, gc_tune

    runners = in_process_runners(tenant, mem0)
    # What a server process does before its first request (project/wsgi.py): load the model and
    # the judge's tables, then freeze what is loaded so that collections no longer walk it. Without
    # the freeze, this process's collections walk everything the earlier phases left (the 10 k
    # size's figures among it) and a 100 k search's pure-Python steps ran ~35 % slower after them.
    embedding_warmup()
    gc_tune()
    warm(runners, texts, searches=0 if new_scope else block)
    return interleaved(runners, texts, reps=reps, block=block, new_scope=new_scope)


def over_http(tenant: Tenant, mem0: Mem0, texts: Texts, *, reps: int, block: int, new_scope: bool) -> dict:
    """The same blocks, each system from its own server (started here, stopped after)."""
    import httpx

    from memory_app.services.api_keys import api_key_issue

    key = api_key_issue(tenant=tenant, name=f"peer bench {time.time():.0f}").raw_key
    ours_port, mem0_port = free_port(), free_port()
    from django.conf import settings

    env = server_env(database_url(settings.DATABASES["default"]["NAME"]), GUNICORN_ACCESS_LOG="")
    ours_server = start_gunicorn(env, ours_port)
    mem0_server = subprocess.Popen(
        [
            str(PEER_PYTHON),
            str(ROOT / "bench" / "peer" / "mem0_server.py"),
            sysconfig.get_paths()["purelib"],
            str(mem0_port),
            json.dumps(mem0_init(mem0.dbname, "server")),
        ],
        start_new_session=True,
    )
    try:
        ours, mem0_base = f"http://127.0.0.1:{ours_port}", f"http://127.0.0.1:{mem0_port}"
        asyncio.run(wait_ready(ours, ours_server))
        asyncio.run(wait_ready(mem0_base, mem0_server, path="/health"))
        with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {key}"}) as client:
            runners = http_runners(client, ours, mem0_base)
            warm(runners, texts, searches=0 if new_scope else block)
            measured = interleaved(runners, texts, reps=reps, block=block, new_scope=new_scope)
            measured["health"] = health_floor(client, ours, mem0_base, reps=reps, block=block)
            return measured
    finally:
        stop_server(ours_server)
        stop_server(mem0_server)


def health_floor(client, ours: str, mem0: str, *, reps: int, block: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """What a request costs each server with no work in it: its liveness route (no database, no
    model), p50 in ms, min / median / max over the reps, so the store and search figures' share of
    transport and framework shows."""
    seconds: dict[str, list[float]] = {"ours": [], "mem0": []}
    for _ in range(reps):
        for name, url in (("ours", f"{ours}/api/v1/health"), ("mem0", f"{mem0}/health")):
            timed = []
            for _ in range(block):
                t0 = time.perf_counter()
                client.get(url).raise_for_status()
                timed.append(time.perf_counter() - t0)
            seconds[name].append(pct(timed, 50))
    return {name: spread(p50s) for name, p50s in seconds.items()}


def texts(*, after: int, count: int) -> Texts:
    stores, queries = peer_data.incoming(count, count, after=after)
    return Texts(stores, queries)
