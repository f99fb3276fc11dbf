"""Store latency and throughput with dedup on and off, in a scope already holding N memories.

    python bench/store.py [--quick] [--json] [--sizes 10000,100000] [--stores N] [--reload]

Embeddings are precomputed (MemoryInput.embedding), so the figures are the service's own cost:
validation, the scope lock, the hash tier, candidates (exact or HNSW plan by scope size), the offline
judge, and the insert / merge / supersede / review writes. Each size lives in its own database on the
same server (`memory_bench_store_<rows>`), loaded once with COPY and kept, so tests never see it; every
run removes what it stored and re-activates what it merged, so reruns start from the same table.
Single-item stores are timed one request at a time; "batch" stores 50 items per call. Also timed: the
candidate query alone under each plan, and the judge's own share of each single dedup store (`judge`:
wall and CPU time of the store path's judge step, the share of stores that ran the token model).
Each size starts with the judge's per-process caches empty (`fresh_judge_caches`). With --json the
last line of stdout is one JSON object; results are also written to bench/results/store.json
(store_quick.json with --quick).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator

import django
import numpy as np
from support import benchenv, store_data, store_real
from support.benchdb import log

ROOT = benchenv.ROOT

RESULTS = ROOT / "bench" / "results" / "store.json"
# A quick run never overwrites the full run's figures (docs/PERFORMANCE.md quotes those).
RESULTS_QUICK = ROOT / "bench" / "results" / "store_quick.json"
BATCH = 50


def prepare(rows: int, *, reload: bool):  # type: ignore[no-untyped-def]
    return store_data.prepare(rows, reload=reload, tenant_name="bench store")


def reset(tenant, max_id: int) -> None:  # type: ignore[no-untyped-def]
    """Undo the run's effects: drop what it stored, re-activate what it merged or superseded."""
    from django.db import connection

    from memory_app.models import DuplicateCluster, Memory, MemoryChange

    DuplicateCluster.objects.filter(tenant=tenant).delete()
    MemoryChange.objects.filter(tenant=tenant).delete()
    # The run's rows go first: a merge result may hold an original's text, and re-activating that
    # original while the result is still active would break the one-active-text constraint.
    Memory.objects.filter(tenant=tenant, pk__lte=max_id).exclude(status="active").update(superseded_by=None)
    Memory.objects.filter(tenant=tenant, pk__gt=max_id).update(superseded_by=None)
    Memory.objects.filter(tenant=tenant, pk__gt=max_id).delete()
    Memory.objects.filter(tenant=tenant, pk__lte=max_id).exclude(status="active").update(status="active")
    Memory.objects.filter(tenant=tenant, pk__lte=max_id, access_count__gt=0).update(
        access_count=0, last_accessed_at=None
    )
    with connection.cursor() as cur:
        cur.execute("VACUUM memory_app_memory")


def percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2)


def _summary(latencies: list[float], seconds: float, count: int, outcomes, by_outcome) -> dict:  # type: ignore[no-untyped-def]
    report = {
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "mean_ms": round(float(np.mean(latencies)), 2),
        "per_second": round(count / seconds, 1),
        "outcomes": dict(outcomes),
    }
    if by_outcome:
        report["p50_ms_by_outcome"] = {k: percentile(v, 50) for k, v in sorted(by_outcome.items())}
    return report


class JudgeClock:
    """The judge's share of each store: wall and CPU time inside the store path's judge step
    (`write._judge`: the judge and decide(), the stored token rows' read included) and whether it
    ran the token model. Wraps that one function while the benchmark runs; the store is unchanged."""

    def __init__(self) -> None:
        self.wall_ms: list[float] = []
        self.cpu_ms: list[float] = []
        self.model_runs = 0

    @contextlib.contextmanager
    def attached(self) -> Iterator[None]:
        from memory_app.judge.signals.alignment import token_encoder
        from memory_app.services.store import write

        original = write._judge

        def timed(**kwargs):  # type: ignore[no-untyped-def]
            encoder = token_encoder()
            encoded, wall, cpu = encoder.encoded, time.perf_counter(), time.process_time()
            try:
                return original(**kwargs)
            finally:
                self.wall_ms.append((time.perf_counter() - wall) * 1000)
                self.cpu_ms.append((time.process_time() - cpu) * 1000)
                self.model_runs += encoder.encoded > encoded

        write._judge = timed
        try:
            yield
        finally:
            write._judge = original

    def report(self, stores: int) -> dict:
        if not self.wall_ms:
            return {"stores_judged": 0}
        return {
            "stores_judged": len(self.wall_ms),
            "wall_ms_p50": percentile(self.wall_ms, 50),
            "wall_ms_mean": round(float(np.mean(self.wall_ms)), 2),
            "cpu_ms_mean": round(float(np.mean(self.cpu_ms)), 2),
            # Per dedup store, judged or not: what the judge adds to the average store.
            "cpu_ms_per_store": round(float(np.sum(self.cpu_ms)) / stores, 2),
            "token_model_share": round(self.model_runs / stores, 3),
        }


def time_single(tenant, plain_items, dedup_items) -> dict:  # type: ignore[no-untyped-def]
    """One item per call, plain and dedup calls alternating, so both modes see the same machine load
    (the machine is shared; run-to-run noise is larger than the difference measured)."""
    from collections import Counter

    from memory_app.overrides import StoreOverrides
    from memory_app.services.store.types import MemoryInput
    from memory_app.services.store.write import memory_store

    modes = {
        "plain": (plain_items, StoreOverrides(deduplicate=False)),
        "dedup": (dedup_items, StoreOverrides()),
    }
    latencies: dict[str, list[float]] = {m: [] for m in modes}
    outcomes: dict[str, Counter] = {m: Counter() for m in modes}
    by_outcome: dict[str, dict[str, list[float]]] = {m: {} for m in modes}
    clock = JudgeClock()
    with clock.attached():
        for n in range(len(plain_items)):
            for mode, (items, options) in modes.items():
                text, vector = items[n]
                item = MemoryInput(text=text, embedding=vector, **store_data.SCOPE)
                t0 = time.perf_counter()
                [result] = memory_store(tenant=tenant, items=[item], options=options)
                elapsed = (time.perf_counter() - t0) * 1000
                latencies[mode].append(elapsed)
                outcomes[mode][result.outcome] += 1
                by_outcome[mode].setdefault(result.outcome, []).append(elapsed)
    report = {
        mode: _summary(
            latencies[mode],
            sum(latencies[mode]) / 1000,
            len(latencies[mode]),
            outcomes[mode],
            by_outcome[mode],
        )
        for mode in modes
    }
    report["dedup"]["judge"] = clock.report(len(dedup_items))
    return report


def time_real(tenant, stores: int) -> dict:  # type: ignore[no-untyped-def]
    """The real-sentence workload (bench/support/store_real.py): hard pairs and conversation turns, plain
    and dedup alternating on two halves of the same composition."""
    _, incoming = store_real.texts()
    vectors = store_real.embed(incoming)
    groups = [
        list(zip(incoming[i : i + 2], vectors[i : i + 2], strict=True)) for i in range(0, len(incoming), 2)
    ]
    plain = [item for g in groups[0::2] for item in g][:stores]
    dedup = [item for g in groups[1::2] for item in g][:stores]
    n = min(len(plain), len(dedup))
    return time_single(tenant, plain[:n], dedup[:n])


def time_batches(tenant, items, *, dedup: bool) -> dict:  # type: ignore[no-untyped-def]
    from collections import Counter

    from memory_app.overrides import StoreOverrides
    from memory_app.services.store.types import MemoryInput
    from memory_app.services.store.write import memory_store

    options = StoreOverrides(deduplicate=dedup)
    inputs = [MemoryInput(text=t, embedding=v, **store_data.SCOPE) for t, v in items]
    latencies, outcomes = [], Counter()
    started = time.perf_counter()
    for start in range(0, len(inputs), BATCH):
        t0 = time.perf_counter()
        result = memory_store(tenant=tenant, items=inputs[start : start + BATCH], options=options)
        latencies.append((time.perf_counter() - t0) * 1000)
        outcomes.update(o.outcome for o in result)
    return _summary(latencies, time.perf_counter() - started, len(inputs), outcomes, None)


def time_candidates(tenant, items, *, exact: bool) -> dict:  # type: ignore[no-untyped-def]
    from django.db import transaction

    from memory_app.judge.calibration.params import load_calibration
    from memory_app.selectors.store.neighbours import Scope, scope_neighbours

    scope = Scope(store_data.SCOPE["user_id"], store_data.SCOPE["namespace"], store_data.SCOPE["kind"])
    radius = load_calibration(store_data.MODEL).candidate_radius
    latencies = []
    for _, vector in items:
        t0 = time.perf_counter()
        with transaction.atomic():
            scope_neighbours(tenant=tenant, scope=scope, embedding=vector, k=5, radius=radius, exact=exact)
        latencies.append((time.perf_counter() - t0) * 1000)
    return {"p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95)}


def time_commit(count: int = 50) -> dict:
    """A one-row UPDATE and COMMIT: the WAL flush every store pays, the floor of the figures above
    (and the part that a busy shared disk inflates)."""
    from django.db import connection, transaction

    latencies = []
    for _ in range(count):
        t0 = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("UPDATE bench_store_meta SET rows = rows")
        latencies.append((time.perf_counter() - t0) * 1000)
    return {"p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95)}


def fresh_judge_caches() -> None:
    """Start a size as a worker that has judged none of its texts: a new token encoder and the
    judge's per-text and per-pair caches emptied. The sizes store the same texts (the real workload
    by design; the synthetic new memories share their seeds), so without this a size would reuse
    the word vectors and pair features the size before computed for them. The one-off registries
    (maxsize 1: units, vocabulary) stay, as in any warm worker."""
    import importlib
    import pkgutil

    import memory_app.judge
    from memory_app.judge.signals import alignment

    alignment._encoder = None
    # Every module of the judge's subpackages too (signals/, calibration/), where the caches live.
    for info in pkgutil.walk_packages(memory_app.judge.__path__, prefix="memory_app.judge."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            params = getattr(value, "cache_parameters", None)
            if params is not None and (params().get("maxsize") or 0) > 1:
                value.cache_clear()


def bench_size(rows: int, stores: int, *, reload: bool) -> dict:
    from django.conf import settings
    from django.db import connection

    from memory_app.selectors.store.neighbours import Scope, scope_is_small

    tenant = prepare(rows, reload=reload)
    with connection.cursor() as cur:
        max_id = store_data.loaded_max_id(cur)
    reset(tenant, max_id)
    scope = Scope(store_data.SCOPE["user_id"], store_data.SCOPE["namespace"], store_data.SCOPE["kind"])
    plan = "exact" if scope_is_small(tenant=tenant, scope=scope) else "hnsw"
    result: dict = {"rows": rows, "plan": plan, "exact_scope_max": settings.STORE_EXACT_SCOPE_MAX}
    result["commit"] = time_commit()
    fresh_judge_caches()
    warm = store_data.new_items(rows, 20, seed=1)
    time_single(tenant, warm, warm)
    reset(tenant, max_id)
    plain_items = store_data.new_items(rows, stores, seed=2)
    dedup_items = store_data.new_items(rows, stores, seed=4)
    result.update(time_single(tenant, plain_items, dedup_items))
    reset(tenant, max_id)
    for name, dedup in (("plain", False), ("dedup", True)):
        result[f"{name}_batch{BATCH}"] = time_batches(tenant, dedup_items, dedup=dedup)
        reset(tenant, max_id)
    log(
        f"  {rows:,} rows: plain p50 {result['plain']['p50_ms']} ms, dedup p50 {result['dedup']['p50_ms']} ms"
    )
    result["dedup_overhead_p50"] = round(result["dedup"]["p50_ms"] / result["plain"]["p50_ms"], 2)
    if store_real.available():
        result["real"] = time_real(tenant, stores)
        result["real"]["dedup_overhead_p50"] = round(
            result["real"]["dedup"]["p50_ms"] / result["real"]["plain"]["p50_ms"], 2
        )
        reset(tenant, max_id)
    else:
        log(f"  real-sentence workload skipped: {store_real.DATA} not found")
    probe = store_data.new_items(rows, min(stores, 100), seed=3)
    result["candidates"] = {
        # the exact plan over a large scope takes ~1 s a query: a few probes tell enough
        "exact": time_candidates(tenant, probe[:10] if rows > 20_000 else probe, exact=True),
        "hnsw": time_candidates(tenant, probe, exact=False),
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer stores (< 1 minute)")
    parser.add_argument("--json", action="store_true", help="last line of stdout: one JSON object")
    parser.add_argument(
        "--sizes", help="comma-separated scope sizes (default 10000,100000; quick 1000,10000)"
    )
    parser.add_argument("--stores", type=int, help="stores timed per mode (default 300; quick 60)")
    parser.add_argument("--reload", action="store_true", help="rebuild the bench tables")
    args = parser.parse_args()
    django.setup()
    sizes = [int(s) for s in (args.sizes or ("1000,10000" if args.quick else "10000,100000")).split(",")]
    stores = args.stores or (60 if args.quick else 300)
    started = time.perf_counter()
    report = {
        "bench": "store",
        "quick": args.quick,
        "stores_per_mode": stores,
        "batch_size": BATCH,
        "sizes": [bench_size(rows, stores, reload=args.reload) for rows in sizes],
    }
    report["seconds"] = round(time.perf_counter() - started, 1)
    for size in report["sizes"]:
        if "real" in size:
            real = size["real"]
            print(
                f"{size['rows']:>8,} rows, real sentences: plain p50 {real['plain']['p50_ms']} ms, "
                f"dedup p50 {real['dedup']['p50_ms']} ms (x{real['dedup_overhead_p50']}), "
                f"outcomes {dict(real['dedup']['outcomes'])}; judge {real['dedup']['judge']}"
            )
        cand = size["candidates"]
        print(
            f"{size['rows']:>8,} rows ({size['plan']}): plain p50 {size['plain']['p50_ms']} ms, "
            f"dedup p50 {size['dedup']['p50_ms']} ms (x{size['dedup_overhead_p50']}), "
            f"dedup {size['dedup']['per_second']}/s single, "
            f"{size[f'dedup_batch{BATCH}']['per_second']}/s batched; "
            f"candidates exact {cand['exact']['p50_ms']} ms / hnsw {cand['hnsw']['p50_ms']} ms; "
            f"bare commit {size['commit']['p50_ms']} ms; judge {size['dedup']['judge']}"
        )
    benchenv.write_results(RESULTS_QUICK if args.quick else RESULTS, report, print_json=args.json)


if __name__ == "__main__":
    main()
