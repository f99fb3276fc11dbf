"""POST /context/all end to end: query embedding (local model), the four parts, packing, output.

One tenant and one user holding N episodic memories (bench/support/store_data.py's synthetic scope, loaded
with COPY into a database of its own, `memory_bench_context_<rows>`, kept between runs), a short-term
session of 20 messages, and the default budget (CONTEXT_ALL_MAX_TOKENS). Every query is new text and
the tenant's embedding cache is emptied before the calls, so each call embeds its query with the
model (no embedding-cache hit), in every run. Two query classes:
- specific: three words of one stored memory (what a question about one thing looks like);
- common: the same plus "user likes", words every stored row holds (the worst case for BM25's
  matched set).

    python bench/context.py [--quick] [--json] [--sizes 10000,100000] [--queries 200] [--reload]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import django
import numpy as np
from support import benchenv, store_data
from support.benchdb import log

RESULTS = benchenv.ROOT / "bench" / "results" / "context.json"
RESULTS_QUICK = benchenv.ROOT / "bench" / "results" / "context_quick.json"


def prepare(rows: int, *, reload: bool):  # type: ignore[no-untyped-def]
    return store_data.prepare(
        rows, name=f"memory_bench_context_{rows}", reload=reload, tenant_name="bench context"
    )


def ensure_session(tenant) -> None:  # type: ignore[no-untyped-def]
    from memory_app.models import ConversationSession
    from memory_app.services.kinds.sessions import MessageInput, session_append

    if ConversationSession.objects.filter(tenant=tenant, session_id="bench-session").exists():
        return
    session_append(
        tenant=tenant,
        session_id="bench-session",
        user_id=store_data.SCOPE["user_id"],
        messages=[
            MessageInput(
                "user" if i % 2 == 0 else "assistant", f"Turn {i}: let us plan the week ahead together."
            )
            for i in range(20)
        ],
    )


def queries(rows: int, count: int, common: bool, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    regen = np.random.default_rng(store_data.SEED + rows)
    which = regen.integers(0, store_data.CENTRES, rows)
    out = []
    for n in range(count):
        i = int(rng.integers(0, rows))
        words = store_data.row_text(i, int(which[i])).split()[2:]
        picked = [words[0], *rng.choice(words[3:], 2, replace=False)]
        prefix = "what does the user likes about" if common else "what about"
        out.append(f"{prefix} {' '.join(picked)} (question {seed}-{n})")
    return out


def time_calls(tenant, texts: list[str]) -> dict:  # type: ignore[no-untyped-def]
    from memory_app.api.views.context import ContextAllApi
    from memory_app.selectors.context.turn import ContextRequest, context_all

    latencies, tokens = [], []
    phases: dict[str, list[float]] = {}
    for text in texts:
        began = time.perf_counter()
        result = context_all(
            tenant=tenant,
            request=ContextRequest(
                query=text, user_id=store_data.SCOPE["user_id"], session_id="bench-session"
            ),
        )
        serialised = time.perf_counter()
        ContextAllApi.ContextAllOutputSerializer(result).data  # noqa: B018 - the response is part of the cost
        ended = time.perf_counter()
        latencies.append((ended - began) * 1000)
        tokens.append(result.tokens["total"])
        for phase, ms in {**result.timings_ms, "serialise": (ended - serialised) * 1000}.items():
            phases.setdefault(phase, []).append(ms)
    return {
        "calls": len(texts),
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(float(np.percentile(latencies, 95)), 1),
        "mean_ms": round(statistics.fmean(latencies), 1),
        "mean_tokens": round(statistics.fmean(tokens), 1),
        "max_tokens_returned": max(tokens),
        # p50 of each step on its own (they need not add up to the call's p50): the query embedding,
        # each part ("episodic"), each search's steps ("episodic.lexical"), packing, serialising.
        "phases_p50_ms": {name: round(statistics.median(ms), 2) for name, ms in phases.items()},
    }


def embedding_p50(count: int) -> float:
    """The local model alone on new short texts: the share of a call the query embedding takes."""
    from memory_app.embeddings.local import local_embed

    latencies = []
    for n in range(min(count, 50)):
        began = time.perf_counter()
        local_embed([f"what about the embedding alone, query {n} {time.time()}"])
        latencies.append((time.perf_counter() - began) * 1000)
    return round(statistics.median(latencies), 1)


def bench_size(rows: int, count: int, *, reload: bool) -> dict:
    from django.conf import settings

    from memory_app.models import EmbeddingCacheEntry
    from memory_app.selectors.context.turn import ContextRequest, context_all

    tenant = prepare(rows, reload=reload)
    ensure_session(tenant)
    # The queries are the same texts in every run (fixed seeds): without this, a second run on the
    # kept database would find each one in the embedding cache and never run the model.
    EmbeddingCacheEntry.objects.filter(tenant=tenant).delete()
    # warm-up: the model, the connection, the plans
    for text in queries(rows, 5, False, seed=99):
        context_all(tenant=tenant, request=ContextRequest(query=text, user_id=store_data.SCOPE["user_id"]))
    report = {
        "rows": rows,
        "budget": settings.CONTEXT_ALL_MAX_TOKENS,
        "embedding_p50_ms": embedding_p50(count),
    }
    for name, common in (("specific", False), ("common", True)):
        report[name] = time_calls(tenant, queries(rows, count, common, seed=1 + int(common)))
        log(f"{rows:>8,} rows, {name:8s}: p50 {report[name]['p50_ms']} ms, p95 {report[name]['p95_ms']} ms")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description="POST /context/all end to end at 10 k and 100 k memories")
    parser.add_argument(
        "--quick", action="store_true", help="1 k and 10 k memories, fewer calls (< 1 minute)"
    )
    parser.add_argument("--json", action="store_true", help="last line of stdout: one JSON object")
    parser.add_argument(
        "--sizes", help="comma-separated memory counts (default 10000,100000; quick 1000,10000)"
    )
    parser.add_argument("--queries", type=int, help="calls per query class (default 200; quick 30)")
    parser.add_argument("--reload", action="store_true", help="rebuild the bench tables")
    args = parser.parse_args()
    django.setup()
    sizes = [int(s) for s in (args.sizes or ("1000,10000" if args.quick else "10000,100000")).split(",")]
    count = args.queries or (30 if args.quick else 200)
    report = {
        "quick": args.quick,
        "load_average": list(os.getloadavg()),
        "sizes": [bench_size(rows, count, reload=args.reload) for rows in sizes],
    }
    report["load_average_after"] = list(os.getloadavg())
    benchenv.write_results(RESULTS_QUICK if args.quick else RESULTS, report, print_json=args.json)


if __name__ == "__main__":
    main()
