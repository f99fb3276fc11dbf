"""Bytes per memory on disk: the table, its text search, B-tree and HNSW indexes, at N rows.

    python bench/storage.py [--quick] [--json] [--sizes 100000,1000000] [--reload]
        [--maintenance-work-mem 3GB]

Loads bench/support/store_data.py's synthetic scope (the same table bench/store.py times, kept in
`memory_bench_store_<rows>`; a size already loaded is measured as it is), then reads the sizes
from the catalogue: the heap with its TOAST, free-space and visibility maps ("table"), each index
grouped by access method (the GIN over `search_vector` is "text search"; the topic and entity GIN
indexes are "other GIN"), the judge's stored token vectors ("tokens": memory_app_memorytokens with
its TOAST and index), and the average stored width of the big columns. Index build times are
reported for a fresh load only. bench/capacity.py derives the capacity table from this file.
Results: bench/results/storage.json (storage_quick.json with --quick: 10 k rows).

The 1 M-row HNSW build is the heavy part; run it on a server started under `nice -n 19` (see
docs/SCALING.md), since the build runs in the server's backend, not in this process.
"""

from __future__ import annotations

import argparse
import os
import time

import django
from support import benchenv, store_data
from support.benchdb import log

ROOT = benchenv.ROOT
RESULTS = ROOT / "bench" / "results" / "storage.json"
RESULTS_QUICK = ROOT / "bench" / "results" / "storage_quick.json"
TABLE = "memory_app_memory"
TOKENS = "memory_app_memorytokens"


def prepare(rows: int, *, reload: bool, maintenance_work_mem: str) -> dict[str, float]:
    """Index build times when this call loaded the table (empty when it was loaded already)."""
    build_seconds: dict[str, float] = {}
    store_data.prepare(
        rows, reload=reload, maintenance_work_mem=maintenance_work_mem, build_seconds=build_seconds
    )
    return build_seconds


def index_group(name: str, method: str) -> str:
    if method == "hnsw":
        return "hnsw"
    if method == "gin":
        return "text_search" if "search" in name else "other_gin"
    return "btree"


def measure(rows_loaded: int) -> dict:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {TABLE}")
        rows = cur.fetchone()[0]
        cur.execute(
            "SELECT pg_table_size(%s::regclass), pg_relation_size(%s::regclass), "
            "coalesce(pg_total_relation_size(reltoastrelid), 0) FROM pg_class WHERE oid = %s::regclass",
            [TABLE, TABLE, TABLE],
        )
        table_bytes, heap_bytes, toast_bytes = cur.fetchone()
        cur.execute(
            "SELECT i.relname, am.amname, pg_relation_size(i.oid) FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am am ON am.oid = i.relam "
            "WHERE x.indrelid = %s::regclass ORDER BY i.relname",
            [TABLE],
        )
        indexes = [
            {"name": n, "method": m, "bytes": b, "group": index_group(n, m)} for n, m, b in cur.fetchall()
        ]
        cur.execute(
            f"SELECT avg(pg_column_size(text)), avg(pg_column_size(embedding)), "
            f"avg(pg_column_size(search_vector)), avg(pg_column_size(t.*)) FROM {TABLE} t"
        )
        text_w, vector_w, tsv_w, row_w = (round(float(v), 1) for v in cur.fetchone())
        # The judge's stored token vectors (models.MemoryTokens): table, TOAST and index together.
        cur.execute(
            f"SELECT pg_total_relation_size('{TOKENS}'::regclass), coalesce(avg(words), 0), "
            f"coalesce(avg(pg_column_size(vectors)), 0) FROM {TOKENS}"
        )
        tokens_bytes, tokens_words, tokens_vector_w = cur.fetchone()
    groups: dict[str, int] = {"table": table_bytes}
    for index in indexes:
        groups[index["group"]] = groups.get(index["group"], 0) + index["bytes"]
    groups["tokens"] = int(tokens_bytes)
    total = sum(groups.values())
    return {
        "rows": rows,
        "bytes": {**groups, "total": total, "heap": heap_bytes, "toast": toast_bytes},
        "bytes_per_memory": {k: round(v / rows, 1) for k, v in {**groups, "total": total}.items()},
        "column_avg_bytes": {"text": text_w, "embedding": vector_w, "search_vector": tsv_w, "row": row_w},
        "token_rows": {
            "words_avg": round(float(tokens_words), 2),
            "vectors_avg_bytes": round(float(tokens_vector_w), 1),
        },
        "indexes": indexes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="one 10 k table (< 1 minute)")
    parser.add_argument("--json", action="store_true", help="last line of stdout: one JSON object")
    parser.add_argument("--sizes", help="comma-separated table sizes (default 100000,1000000)")
    parser.add_argument("--reload", action="store_true", help="rebuild the bench tables")
    parser.add_argument(
        "--maintenance-work-mem",
        default="3GB",
        help="for the index builds; a 1 M-row HNSW graph needs about 2.5 GB to be built in memory",
    )
    args = parser.parse_args()
    django.setup()
    sizes = [int(s) for s in (args.sizes or ("10000" if args.quick else "100000,1000000")).split(",")]
    started = time.perf_counter()
    results = []
    for rows in sizes:
        t0 = time.perf_counter()
        build = prepare(rows, reload=args.reload, maintenance_work_mem=args.maintenance_work_mem)
        size = measure(rows)
        size["fresh_load"] = bool(build)
        size["index_build_seconds"] = build
        size["load_seconds"] = round(time.perf_counter() - t0, 1) if build else None
        results.append(size)
        per = size["bytes_per_memory"]
        log(
            f"{size['rows']:>9,} rows: {per['total']:.0f} B/memory (table {per['table']:.0f}, "
            f"text search {per.get('text_search', 0):.0f}, B-tree {per.get('btree', 0):.0f}, "
            f"HNSW {per.get('hnsw', 0):.0f}, other GIN {per.get('other_gin', 0):.0f}, "
            f"token vectors {per.get('tokens', 0):.0f})"
        )
    report = {
        "bench": "storage",
        "quick": args.quick,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "maintenance_work_mem": args.maintenance_work_mem,
        "sizes": results,
        "seconds": round(time.perf_counter() - started, 1),
    }
    benchenv.write_results(RESULTS_QUICK if args.quick else RESULTS, report, print_json=args.json)


if __name__ == "__main__":
    main()
