"""Bytes per memory on disk, every table and index a memory writes, at N rows.

    python bench/storage.py [--quick] [--json] [--sizes 100000,1000000] [--reload]
        [--maintenance-work-mem 3GB] [--sample 2000]

Loads bench/support/store_data.py's synthetic scope (the same table bench/store.py times, kept in
`memory_bench_store_<rows>`; a size already loaded is measured as it is), then reads the sizes
from the catalogue: the heap with its TOAST, free-space and visibility maps ("table"), each index
grouped by access method (the GIN over `search_vector` is "text search"; the topic and entity GIN
indexes are "other GIN"), the judge's stored token vectors ("tokens": memory_app_memorytokens with
its TOAST and index), and the average stored width of the big columns. Index build times are
reported for a fresh load only. bench/capacity.py derives the capacity table from this file.

The synthetic load writes the memory and token tables only. What else a memory writes, and what a
real text takes, comes from a sample stored through the service (`memory_store`, deduplication on,
the text embedded by the service as for a REST client): `--sample` LoCoMo turns of conversations
0-4 ("Speaker: text", one scope per conversation) into a fresh database, each table's and index's
growth divided by the memories stored ("store_path": the embedding cache entries, the lineage
rows, the memory and token rows of real texts). `bytes_per_memory.total` at each size is the
memory and token tables as loaded plus the sample's other tables per memory.
Results: bench/results/storage.json (storage_quick.json with --quick: 10 k rows, a 300-turn sample).

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


SAMPLE_DATABASE = "memory_bench_storage_sample"
# Measured at each size by the synthetic load itself; the sample gives every other table.
LOADED = (TABLE, TOKENS)


def relation_sizes() -> dict[str, dict[str, int]]:
    """Per table of the database: its heap with TOAST and maps ("table") and each index."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "SELECT c.relname, pg_table_size(c.oid), i.relname, pg_relation_size(i.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public' "
            "LEFT JOIN pg_index x ON x.indrelid = c.oid LEFT JOIN pg_class i ON i.oid = x.indexrelid "
            "WHERE c.relkind = 'r'"
        )
        sizes: dict[str, dict[str, int]] = {}
        for table, table_bytes, index, index_bytes in cur.fetchall():
            entry = sizes.setdefault(table, {"table": table_bytes})
            if index:
                entry[index] = index_bytes
    return sizes


def store_path_sample(count: int) -> dict:
    """Store `count` LoCoMo turns through the service in a fresh database; per table and index,
    its growth per memory stored."""
    from django.db import connection
    from support.benchdb import use_database

    from memory_app.models import Memory, Tenant
    from memory_app.services.store.types import MemoryInput
    from memory_app.services.store.write import memory_store
    from memory_eval.locomo import load_locomo, turn_text

    turns, _ = load_locomo(ROOT.parent / "shared" / "data" / "locomo10.json")
    turns = [turn for turn in turns if turn.conversation <= 4][:count]
    use_database(SAMPLE_DATABASE, fresh=True, migrate=True)
    tenant = Tenant.objects.create(name="storage sample", slug="storage-sample")
    with connection.cursor() as cur:
        cur.execute("VACUUM")
    before = relation_sizes()
    t0 = time.perf_counter()
    for turn in turns:
        scope = f"locomo-{turn.conversation}"
        item = MemoryInput(text=turn_text(turn), user_id=scope, namespace=scope)
        memory_store(tenant=tenant, items=[item])
    seconds = time.perf_counter() - t0
    with connection.cursor() as cur:
        cur.execute("VACUUM")
    after = relation_sizes()
    memories = Memory.objects.filter(tenant=tenant).count()
    tables = {}
    for table, parts in sorted(after.items()):
        grown = {name: size - before.get(table, {}).get(name, 0) for name, size in parts.items()}
        if any(grown.values()):
            tables[table] = {name: round(size / memories, 1) for name, size in grown.items() if size}
    log(f"  sample: {len(turns):,} turns stored as {memories:,} memories in {seconds:.0f} s")
    for table, per_memory in tables.items():
        log(f"    {table}: {sum(per_memory.values()):.0f} B/memory")
    return {
        "turns": len(turns),
        "memories": memories,
        "tables": tables,
        "bytes_per_memory": {table: round(sum(per.values()), 1) for table, per in tables.items()},
    }


def with_sample(size: dict, sample: dict) -> None:
    """Adds the sample's other tables to a loaded size's figures, per table, and the total."""
    per = size["bytes_per_memory"]
    others = {t: b for t, b in sample["bytes_per_memory"].items() if t not in LOADED}
    per["loaded_total"] = per["total"]
    per["other_tables"] = round(sum(others.values()), 1)
    per["total"] = round(per["loaded_total"] + per["other_tables"], 1)
    size["other_tables"] = others


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="one 10 k table (< 1 minute)")
    parser.add_argument("--json", action="store_true", help="last line of stdout: one JSON object")
    parser.add_argument("--sizes", help="comma-separated table sizes (default 100000,1000000)")
    parser.add_argument("--reload", action="store_true", help="rebuild the bench tables")
    parser.add_argument(
        "--sample", type=int, help="LoCoMo turns stored through the service (default 2000; 300 quick)"
    )
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
    sample = store_path_sample(args.sample or (300 if args.quick else 2000))
    for size in results:
        with_sample(size, sample)
        log(f"{size['rows']:>9,} rows, every table: {size['bytes_per_memory']['total']:.0f} B/memory")
    report = {
        "bench": "storage",
        "store_path": sample,
        "quick": args.quick,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "maintenance_work_mem": args.maintenance_work_mem,
        "sizes": results,
        "seconds": round(time.perf_counter() - started, 1),
    }
    benchenv.write_results(RESULTS_QUICK if args.quick else RESULTS, report, print_json=args.json)


if __name__ == "__main__":
    main()
