"""The embedding cache: tier latencies, false reuse of the near-duplicate tier, calls saved, local model.

    python bench/embedding_cache.py [--quick] [--json] [--sizes 10000,100000] [--turns N] [--reload]

Measures, writing bench/results/embedding_cache.json (with --json the last stdout line is the same):
- local model: texts per second batched (64 a batch), single-text latency;
- exact hit: `embed_text` of a cached text, end to end (hash, one indexed SELECT, statistics), and
  of a text a tenant stored as a memory (no cache row: the memory answers; `stored_text`);
- near-duplicate lookup: the tier-3 query (`near_lookup`, HNSW `embcache_proxy_hnsw`, LIMIT 1 per
  text, own transaction) with 10 k and 100 k cache rows, for planted near duplicates and for fresh
  texts; rows are clustered synthetic unit vectors, loaded with COPY once per size into a database of
  their own (`memory_bench_embcache_<rows>`) and kept for later runs;
- false reuse at the default thresholds: the cache's own rule (`near_reuse`, or equal normalised
  text) on STS-B test pairs scored below 5.0 and PAWS-Wiki test pairs labelled 0;
- provider calls saved: LoCoMo turns with case/whitespace/punctuation/contraction/typo variants
  (bench/support/embedding_data.py) sent one text per call through `embed_texts` with the OpenAI provider
  pointed at a local OpenAI-compatible stub server that counts requests.
--quick uses 2 k / 10 k rows, samples of the pair sets and 150 turns.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import django
import numpy as np
from support import benchenv, embedding_data
from support.benchdb import log, use_database

ROOT = benchenv.ROOT

RESULTS = ROOT / "bench" / "results" / "embedding_cache.json"
DIM = 384
NEAR_MODEL = "bench-remote-model"


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3)


# --- local model ------------------------------------------------------------------------------
def bench_local_model(texts: list[str], singles: int) -> dict:
    from memory_app.embeddings.local import local_embed

    local_embed(texts[:8])  # load and warm up
    started = time.perf_counter()
    local_embed(texts, batch_size=64)
    batched = time.perf_counter() - started
    latencies = []
    for text in texts[:singles]:
        t0 = time.perf_counter()
        local_embed([text])
        latencies.append((time.perf_counter() - t0) * 1000)
    return {
        "texts": len(texts),
        "batched_texts_per_second": round(len(texts) / batched, 1),
        "single_p50_ms": pct(latencies, 50),
        "single_p99_ms": pct(latencies, 99),
    }


# --- exact hits -------------------------------------------------------------------------------
def bench_exact(texts: list[str]) -> dict:
    from memory_app.embeddings import embed_text, embed_texts
    from memory_app.embeddings.cache.stats import embedding_stats_flush

    embed_texts(texts, tenant=None)  # cache them (misses)
    embedding_stats_flush()
    latencies = []
    for text in texts:
        t0 = time.perf_counter()
        embed_text(text, tenant=None)
        latencies.append((time.perf_counter() - t0) * 1000)
    return {
        "lookups": len(texts),
        "p50_ms": pct(latencies, 50),
        "p99_ms": pct(latencies, 99),
        "stored_text": bench_stored_hit(texts),
    }


def bench_stored_hit(texts: list[str]) -> dict:
    """`embed_text` of a text a tenant stored as a memory: no cache row of its own, the memory's row
    answers (the third branch of the hash-tier statement, on memory_active_text_unique)."""
    import uuid

    from memory_app.embeddings import embed_text
    from memory_app.models import EmbeddingCacheEntry, Tenant
    from memory_app.overrides import StoreOverrides
    from memory_app.services.store.types import MemoryInput
    from memory_app.services.store.write import memory_store

    tenant = Tenant.objects.create(name="embedding_cache stored", slug=f"embcache-{uuid.uuid4().hex[:12]}")
    try:
        for start in range(0, len(texts), 50):
            items = [MemoryInput(text=text, user_id="bench") for text in texts[start : start + 50]]
            memory_store(tenant=tenant, items=items, options=StoreOverrides(deduplicate=False))
        rows = EmbeddingCacheEntry.objects.filter(tenant=tenant).count()
        latencies = []
        for text in texts:
            t0 = time.perf_counter()
            embed_text(text, tenant=tenant)
            latencies.append((time.perf_counter() - t0) * 1000)
    finally:
        tenant.delete()
    return {
        "lookups": len(texts),
        "cache_rows_written": rows,
        "p50_ms": pct(latencies, 50),
        "p99_ms": pct(latencies, 99),
    }


# --- near-duplicate lookup at size ------------------------------------------------------------
def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _synthetic(rows: int, seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = _unit(rng.standard_normal((max(rows // 100, 10), DIM)))
    picks = rng.integers(0, len(centres), rows)
    return _unit(centres[picks] + rng.standard_normal((rows, DIM)) * 0.06)


def _vec(row: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in row) + "]"


def load_cache_rows(rows: int, *, reload: bool) -> np.ndarray:
    from django.db import connection

    from memory_app.models import EmbeddingCacheEntry

    vectors = _synthetic(rows)
    table = EmbeddingCacheEntry._meta.db_table
    have = EmbeddingCacheEntry.objects.filter(model=NEAR_MODEL).count()
    if have == rows and not reload:
        return vectors
    log(f"loading {rows:,} cache rows (kept for later runs)")
    t0 = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM {table}")
        cur.execute("DROP INDEX IF EXISTS embcache_proxy_hnsw")
        columns = "model, dimensions, content_hash, normalized_hash, embedding, proxy_embedding, token_count, created_at, hit_count"  # noqa: E501
        with cur.connection.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for i, row in enumerate(vectors):
                digest = hashlib.sha256(f"row {i}".encode()).hexdigest()
                v = _vec(row)
                copy.write_row((NEAR_MODEL, DIM, digest, digest, v, v, 10, "2026-01-01T00:00:00Z", 0))
        cur.execute("SET maintenance_work_mem = '512MB'")
        cur.execute(
            f"CREATE INDEX embcache_proxy_hnsw ON {table} USING hnsw (proxy_embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        cur.execute(f"VACUUM ANALYZE {table}")
    log(f"  loaded and indexed in {time.perf_counter() - t0:.0f}s")
    return vectors


def bench_near_lookup(rows: int, queries: int, *, reload: bool) -> dict:
    from django.db import connection, transaction

    from memory_app.embeddings.cache.near import _lateral_sql, near_lookup

    use_database(f"memory_bench_embcache_{rows}", migrate=True)
    vectors = load_cache_rows(rows, reload=reload)
    rng = np.random.default_rng(5)
    picks = rng.choice(rows, queries, replace=False)
    near_queries = _unit(vectors[picks] + rng.standard_normal((queries, DIM)) * 0.004)
    fresh_queries = _synthetic(queries, seed=99)
    out: dict = {"rows": rows, "queries": queries}
    for label, batch in (("near_duplicate", near_queries), ("fresh_text", fresh_queries)):
        latencies, found = [], 0
        for i, q in enumerate(batch):
            t0 = time.perf_counter()
            with transaction.atomic():
                (match,) = near_lookup(model=NEAR_MODEL, proxies=q[None, :], restore=False)
            latencies.append((time.perf_counter() - t0) * 1000)
            if label == "near_duplicate" and match is not None:
                found += int(np.allclose(match.embedding, vectors[picks[i]], atol=1e-5))
        out[label] = {"p50_ms": pct(latencies, 50), "p99_ms": pct(latencies, 99)}
        if label == "near_duplicate":
            out[label]["planted_row_found"] = round(found / len(batch), 4)
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cur.execute("EXPLAIN " + _lateral_sql(None), [[_vec(near_queries[0])], NEAR_MODEL])
        plan = "\n".join(r[0] for r in cur.fetchall())
    out["uses_hnsw_index"] = "embcache_proxy_hnsw" in plan
    return out


# --- false reuse on labelled pairs ------------------------------------------------------------
def _pair_decisions(pairs: list[tuple[str, str]]) -> dict:
    from memory_app.embeddings.cache.near import near_reuse
    from memory_app.embeddings.cache.sketch import surface_sketches
    from memory_app.embeddings.local import local_embed
    from memory_app.text import identity_skeleton, normalize_text

    a = local_embed([p[0] for p in pairs], batch_size=64)
    b = local_embed([p[1] for p in pairs], batch_size=64)
    proxy = (a * b).sum(axis=1)
    sa, sb = surface_sketches([p[0] for p in pairs]), surface_sketches([p[1] for p in pairs])
    surface = (sa * sb).sum(axis=1)
    same_text = np.array([normalize_text(x) == normalize_text(y) for x, y in pairs])
    same_skeleton = [identity_skeleton(x) == identity_skeleton(y) for x, y in pairs]
    near = np.array(
        [
            same and near_reuse(proxy_score=float(p), surface_score=float(s))
            for p, s, same in zip(proxy, surface, same_skeleton, strict=True)
        ]
    )
    return {"proxy": proxy, "surface": surface, "same_text": same_text, "near": near}


def _rates(d: dict, mask: np.ndarray, threshold: float) -> dict:
    n = int(mask.sum())
    reused = (d["near"] | d["same_text"])[mask]
    return {
        "pairs": n,
        "false_reuse_rate": round(float(reused.mean()), 4),
        "false_reuse_count": int(reused.sum()),
        "of_which_identical_normalised_text": int(d["same_text"][mask].sum()),
        "proxy_only_false_reuse_rate": round(float((d["proxy"][mask] >= threshold).mean()), 4),
    }


def bench_false_reuse(sts_sample: int | None, paws_sample: int | None) -> dict:
    from django.conf import settings

    rng = np.random.default_rng(3)
    threshold = settings.SEMANTIC_DEDUP_THRESHOLD
    sts = embedding_data.sts_pairs()
    paws = embedding_data.paws_pairs()
    if sts_sample:
        sts = [sts[i] for i in rng.choice(len(sts), min(sts_sample, len(sts)), replace=False)]
    if paws_sample:
        paws = [paws[i] for i in rng.choice(len(paws), min(paws_sample, len(paws)), replace=False)]
    out: dict = {
        "semantic_dedup_threshold": threshold,
        "surface_min": settings.EMBEDDING_NEAR_DUP_SURFACE_MIN,
    }
    d = _pair_decisions([(x, y) for _, x, y in sts])
    scores = np.array([s for s, _, _ in sts])
    out["sts_below_5"] = _rates(d, scores < 5.0, threshold)
    out["sts_5_reused"] = round(float((d["near"] | d["same_text"])[scores >= 5.0].mean()), 4)
    d = _pair_decisions([(x, y) for _, x, y in paws])
    labels = np.array([lab for lab, _, _ in paws])
    out["paws_label_0"] = _rates(d, labels == 0, threshold)
    out["paws_label_1_reused"] = round(float((d["near"] | d["same_text"])[labels == 1].mean()), 4)
    return out


# --- provider calls saved ---------------------------------------------------------------------
class _StubOpenAI(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings that counts requests and inputs."""

    requests = 0
    inputs = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).requests += 1
        type(self).inputs += len(body["input"])
        data = []
        for i, text in enumerate(body["input"]):
            seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
            vector = np.random.default_rng(seed).standard_normal(DIM)
            data.append({"object": "embedding", "index": i, "embedding": vector.round(6).tolist()})
        payload = json.dumps({"object": "list", "data": data, "model": body["model"], "usage": {}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


def bench_calls_saved(turns: int) -> dict:
    from collections import Counter

    from django.test import override_settings

    from memory_app.embeddings import embed_texts
    from memory_app.embeddings.cache.stats import _pending, embedding_stats_flush, stats_pending_reset
    from memory_app.models import EmbeddingCacheEntry

    stream = embedding_data.workload(turns)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StubOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    model = "bench-workload-model"
    EmbeddingCacheEntry.objects.filter(model=model).delete()
    settings_ = {
        "EMBEDDING_PROVIDER": "openai",
        "EMBEDDING_MODEL": model,
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
        "EMBEDDING_NEAR_DUP": "auto",
    }
    per_kind_total, per_kind_saved = Counter(), Counter()
    embedding_stats_flush()
    stats_pending_reset()
    started = time.perf_counter()
    with override_settings(**settings_):
        for kind, text in stream:
            before = _StubOpenAI.requests
            embed_texts([text], tenant=None)
            per_kind_total[kind] += 1
            per_kind_saved[kind] += int(_StubOpenAI.requests == before)
        totals = _pending.totals[model]
    elapsed = time.perf_counter() - started
    server.shutdown()
    texts = len(stream)
    return {
        "turns": turns,
        "texts": texts,
        "provider_requests": _StubOpenAI.requests,
        "provider_calls_saved": round(1 - _StubOpenAI.requests / texts, 4),
        "by_tier": {
            "exact": totals.exact_hits,
            "normalized": totals.normalized_hits,
            "near": totals.near_hits,
            "misses": totals.misses,
        },
        "saved_by_kind": {k: round(per_kind_saved[k] / per_kind_total[k], 3) for k in sorted(per_kind_total)},
        "texts_by_kind": dict(sorted(per_kind_total.items())),
        "mean_ms_per_text": round(elapsed / texts * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes and samples (< 1 minute)")
    parser.add_argument("--json", action="store_true", help="last line of stdout: one JSON object")
    parser.add_argument("--sizes", help="cache rows for the near-duplicate lookup (default 10000,100000)")
    parser.add_argument("--turns", type=int, help="LoCoMo turns in the workload (default 600; quick 150)")
    parser.add_argument("--reload", action="store_true", help="rebuild the bench cache tables")
    parser.add_argument(
        "--lookup-only", action="store_true", help="only the near-duplicate lookup at --sizes"
    )
    parser.add_argument("--exact-only", action="store_true", help="only the exact-hit latency (1,000 texts)")
    args = parser.parse_args()
    django.setup()
    if args.lookup_only:
        sizes = [int(s) for s in (args.sizes or "10000,100000").split(",")]
        lookups = [bench_near_lookup(rows, 300, reload=args.reload) for rows in sizes]
        print(json.dumps({"near_lookup": lookups}))
        return
    if args.exact_only:
        use_database("memory_bench_embcache_work", migrate=True)
        from memory_app.models import EmbeddingCacheEntry

        EmbeddingCacheEntry.objects.all().delete()
        print(json.dumps({"exact_hit": bench_exact(embedding_data.locomo_turns(1000))}))
        return
    if embedding_data.data_dir() is None:
        log("../shared/data is absent: the pair sets and the LoCoMo workload cannot be measured; skipping")
        sys.exit(0)
    from memory_app.embeddings.cache.stats import stats_pending_reset

    quick = args.quick
    sizes = [int(s) for s in (args.sizes or ("2000,10000" if quick else "10000,100000")).split(",")]
    turns = args.turns or (150 if quick else 600)
    result: dict = {"quick": quick, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    t0 = time.perf_counter()
    log("local model")
    corpus = embedding_data.locomo_turns(256 if quick else 1024)
    result["local_model"] = bench_local_model(corpus, 30 if quick else 100)
    log("near-duplicate lookup")
    result["near_lookup"] = [
        bench_near_lookup(rows, 100 if quick else 300, reload=args.reload) for rows in sizes
    ]
    use_database("memory_bench_embcache_work", migrate=True)
    from memory_app.models import EmbeddingCacheEntry

    EmbeddingCacheEntry.objects.all().delete()
    stats_pending_reset()
    log("exact hits")
    result["exact_hit"] = bench_exact(embedding_data.locomo_turns(200 if quick else 1000))
    log("false reuse")
    result["false_reuse"] = bench_false_reuse(200 if quick else None, 500 if quick else None)
    log("provider calls saved")
    result["calls_saved"] = bench_calls_saved(turns)
    largest = result["near_lookup"][-1]
    result["targets"] = {
        "exact_hit_p50_le_1ms": result["exact_hit"]["p50_ms"] <= 1.0,
        "near_lookup_p50_le_10ms_at_largest": max(
            largest["near_duplicate"]["p50_ms"], largest["fresh_text"]["p50_ms"]
        )
        <= 10.0,
        "sts_false_reuse_lt_1pct": result["false_reuse"]["sts_below_5"]["false_reuse_rate"] < 0.01,
        "paws_false_reuse_lt_1pct": result["false_reuse"]["paws_label_0"]["false_reuse_rate"] < 0.01,
        "calls_saved_ge_20pct": result["calls_saved"]["provider_calls_saved"] >= 0.20,
    }
    result["seconds"] = round(time.perf_counter() - t0, 1)
    benchenv.write_results(RESULTS, result, print_json=args.json)
    if not args.json:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
