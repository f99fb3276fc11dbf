"""What one request of each kind of the load mix costs the server, one at a time, in process.

    python bench/request_cost.py [--quick] [--json] [--requests N]

The load benchmark's tenant and requests (bench/load.py: its database, kept between runs, and its
texts, each new so every request embeds), sent through Django's WSGI handler (the test client,
production settings: DEBUG off, authentication by API key) one after another: for each operation
the CPU time of the request's own thread (`thread_time`) and the statements it sends to PostgreSQL,
BEGIN, COMMIT and savepoints included (`CaptureQueriesContext`). The local model's forward pass runs
in the micro-batcher's thread and is not in the CPU figure; the second table is its cost per text
by batch size (one torch thread), which the request adds on top; the third, a search query's pass
alone, through the full model and through its int8 copy (EMBEDDING_QUERY_INT8), with the cosine of
the two vectors.

Without the contention of the load benchmark these figures move little between runs on a busy
machine, so they show where a change lands: the load benchmark's `--profile` shows the same split
under concurrency. Results: bench/results/request_cost.json (request_cost_quick.json with --quick).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

from support import benchenv

os.environ.setdefault("DEBUG", "false")
os.environ["ALLOWED_HOSTS"] = "testserver"
os.environ["SECURE_SSL_REDIRECT"] = "false"
os.environ["CELERY_BROKER_URL"] = ""

import django
from support.benchdb import log

ROOT = benchenv.ROOT
OPERATIONS = ("store", "search", "context_all")
BATCH_SIZES = (1, 2, 4, 8, 16)


def request_costs(requests: int, rows: int, users: int) -> dict[str, dict[str, float]]:
    import load
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from support import load_data

    from memory_app.services.api_keys import api_key_issue

    tenant, _ = load.prepare(rows, users)
    key = api_key_issue(tenant=tenant, name=f"request cost {time.time():.0f}").raw_key
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    texts = load_data.TextSource(seed=11)
    rng = random.Random(3)
    out = {}
    for op in OPERATIONS:
        for _ in range(3):  # warm: model, caches, connection
            path, body = load.request_for(op, rng, users, texts)
            client.post(path, body, content_type="application/json")
        cpu, queries = [], []
        for _ in range(requests):
            path, body = load.request_for(op, rng, users, texts)
            with CaptureQueriesContext(connection) as captured:
                started = time.thread_time()
                response = client.post(path, body, content_type="application/json")
                cpu.append((time.thread_time() - started) * 1000)
            if response.status_code >= 300:
                raise SystemExit(f"{op}: {response.status_code} {response.content[:300]!r}")
            queries.append(len(captured.captured_queries))
        out[op] = {
            "cpu_ms_p50": round(statistics.median(cpu), 2),
            "cpu_ms_mean": round(statistics.mean(cpu), 2),
            "queries_min": min(queries),
            "queries_max": max(queries),
        }
        log(f"  {op:12s} CPU p50 {out[op]['cpu_ms_p50']} ms, {min(queries)}-{max(queries)} statements")
    return out


def forward_pass_costs(per_size: int) -> dict[str, float]:
    import torch
    from support import load_data

    from memory_app.embeddings.local import local_embed

    torch.set_num_threads(1)
    texts = [f"{sentence} ({i})" for i, sentence in enumerate(load_data.sentences()[:2000])]
    local_embed(["warm-up"])
    out, start = {}, 0
    for size in BATCH_SIZES:
        done, began = 0, time.thread_time()
        while done < per_size:
            local_embed(texts[start : start + size])
            start, done = start + size, done + size
        out[str(size)] = round((time.thread_time() - began) * 1000 / done, 2)
    log("  forward pass, CPU ms per text by batch size: " + ", ".join(f"{k}: {v}" for k, v in out.items()))
    return out


def query_pass_costs(queries: int) -> dict[str, float]:
    """A search query's pass alone (one text a pass, as a search runs it): thread CPU ms through the
    full model and through its int8 copy (EMBEDDING_QUERY_INT8), and the cosine of the two vectors."""
    import numpy as np
    from support import load_data

    from memory_app.embeddings.local import local_embed

    texts = [f"What did they say about {s.rstrip('.').lower()}?" for s in load_data.sentences()[:queries]]
    local_embed(["warm-up"], query=True)
    full, int8, cosines = [], [], []
    for text in texts:
        began = time.thread_time()
        a = local_embed([text])
        full.append(time.thread_time() - began)
        began = time.thread_time()
        b = local_embed([text], query=True)
        int8.append(time.thread_time() - began)
        cosines.append(float(a[0] @ b[0]))
    out = {
        "queries": len(texts),
        "full_cpu_ms_p50": round(float(np.median(full)) * 1000, 2),
        "int8_cpu_ms_p50": round(float(np.median(int8)) * 1000, 2),
        "cosine_mean": round(float(np.mean(cosines)), 4),
        "cosine_min": round(float(np.min(cosines)), 4),
    }
    log(
        f"  query pass, CPU ms p50: full {out['full_cpu_ms_p50']}, int8 {out['int8_cpu_ms_p50']}; "
        f"cosine {out['cosine_mean']} (min {out['cosine_min']})"
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 memories over 20 users (else 100,000)")
    parser.add_argument("--json", action="store_true", help="last line of stdout: the JSON result")
    parser.add_argument("--requests", type=int, default=20, help="measured requests per operation")
    args = parser.parse_args()
    rows, users = (10_000, 20) if args.quick else (100_000, 100)
    django.setup()
    load_before = [round(x, 2) for x in os.getloadavg()]
    result = {
        "benchmark": "request_cost",
        "quick": args.quick,
        "rows": rows,
        "requests_per_operation": args.requests,
        "operations": request_costs(args.requests, rows, users),
        "forward_pass_cpu_ms_per_text": forward_pass_costs(48),
        "query_pass": query_pass_costs(200),
        "load_average": {"before": load_before, "after": [round(x, 2) for x in os.getloadavg()]},
    }
    name = "request_cost_quick.json" if args.quick else "request_cost.json"
    benchenv.write_results(ROOT / "bench" / "results" / name, result, print_json=args.json)


if __name__ == "__main__":
    main()
