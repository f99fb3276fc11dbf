"""Capacity table for a distributed (Citus) deployment, derived from measured figures only.

    python bench/capacity.py [--memories 100000000] [--tenants 10000] [--json]

Inputs (re-run this script whenever they change):
- bench/results/storage.json (bench/storage.py): bytes per memory of the table and each index group,
  taken from the largest table measured;
- bench/results/search.json (bench/search.py): search p50 by plan and scope size at 100 k and 1 M rows;
- bench/results/store.json (bench/store.py): store p50 (plain and with dedup) by scope size;
- bench/results/citus.json (bench/citus.py): what routing through a Citus coordinator adds to a
  request (the cluster's p50 less the single node's, same run, same data), added to each latency.

Model (docs/SCALING.md explains each assumption):
- a worker node keeps its indexes (HNSW, B-tree, text search, other GIN) in memory: it holds at most
  RAM_FRACTION of its RAM in index bytes, and at most DISK_FRACTION of its disk in total bytes;
- memories are spread evenly over workers by tenant (hash of tenant_id over many shards);
- a search is served by one worker (every query names its tenant), so its latency is that of the
  scope it searches on a table of one worker's size: the measured p50 of the plan the service picks
  for that scope size, at the measured table size nearest the per-worker table;
- replicas multiply nodes, not capacity: each worker gets REPLICAS streaming standbys for reads.
Output: bench/results/capacity.json (the last stdout line with --json).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

# Node shapes priced by the big clouds as memory-optimised instances (RAM GB, vCPU, disk GB).
NODES = [
    {"name": "r-large 64 GB", "ram_gb": 64, "vcpu": 8, "disk_gb": 1000},
    {"name": "r-xlarge 128 GB", "ram_gb": 128, "vcpu": 16, "disk_gb": 2000},
    {"name": "r-2xlarge 256 GB", "ram_gb": 256, "vcpu": 32, "disk_gb": 4000},
]
RAM_FRACTION = 0.6  # the rest: shared_buffers overhead, connections, sorts, the OS
DISK_FRACTION = 0.5  # room for a REINDEX CONCURRENTLY, WAL, vacuum bloat and backups staging
REPLICAS = 1  # read standbys per worker
INDEX_GROUPS = ("hnsw", "btree", "text_search", "other_gin")
GB = 1024**3


def load(name: str) -> dict:
    path = RESULTS / name
    if not path.exists():
        sys.exit(f"{path} is missing: run bench/{name.split('.')[0]}.py first")
    return json.loads(path.read_text())


def per_memory(storage: dict) -> dict:
    largest = max(storage["sizes"], key=lambda s: s["rows"])
    per = largest["bytes_per_memory"]
    index = sum(per.get(group, 0.0) for group in INDEX_GROUPS)
    return {"basis_rows": largest["rows"], "total": per["total"], "index": index, **per}


def search_p50(search: dict, scope_rows: int, table_rows: int) -> dict:
    """The planner's own choice (not forced) for the measured scope nearest `scope_rows`, at the
    measured table size nearest `table_rows` (on a log scale)."""
    chosen = [r for r in search["rows"] if not r["forced"]]
    tables = sorted({r["table_rows"] for r in chosen})
    table = min(tables, key=lambda t: abs(math.log(t) - math.log(max(table_rows, 1))))
    at_table = [r for r in chosen if r["table_rows"] == table]
    row = min(at_table, key=lambda r: abs(math.log(r["scope_rows"]) - math.log(max(scope_rows, 1))))
    return {
        "p50_ms": row["p50_ms"],
        "p99_ms": row["p99_ms"],
        "plan": row["plan"],
        "measured_scope": row["scope"],
        "measured_table_rows": table,
    }


def store_p50(store: dict, scope_rows: int) -> dict:
    row = min(store["sizes"], key=lambda s: abs(math.log(s["rows"]) - math.log(max(scope_rows, 1))))
    return {
        "plain_p50_ms": row["plain"]["p50_ms"],
        "dedup_p50_ms": row["dedup"]["p50_ms"],
        "scope_rows": row["rows"],
    }


def citus_overhead(citus: dict) -> dict:
    """Milliseconds a request spends on the coordinator's planning and the hop to its worker:
    the measured p50 on the 2-worker cluster less the single node's (never below 0)."""
    single, cluster = citus["single"], citus["citus"]
    return {
        operation: round(max(0.0, cluster[operation]["p50_ms"] - single[operation]["p50_ms"]), 1)
        for operation in ("search", "store")
    } | {
        "measured_memories": citus["memories"],
        "measured_tenants": citus["tenants"],
        "shard_tasks_of_a_tenant_query": citus["citus"]["tenant_query_shard_tasks"],
        "load_average": citus.get("load_average"),
    }


def plan(memories: int, tenants: int) -> dict:
    storage, search, store = load("storage.json"), load("search.json"), load("store.json")
    overhead = citus_overhead(load("citus.json"))
    bytes_per = per_memory(storage)
    per_tenant = memories / tenants
    rows = []
    for node in NODES:
        by_ram = RAM_FRACTION * node["ram_gb"] * GB / bytes_per["index"]
        by_disk = DISK_FRACTION * node["disk_gb"] * GB / bytes_per["total"]
        per_node = int(min(by_ram, by_disk))
        workers = math.ceil(memories / per_node)
        table_rows = memories / workers
        rows.append(
            {
                "node": node["name"],
                "ram_gb": node["ram_gb"],
                "disk_gb": node["disk_gb"],
                "memories_per_worker": per_node,
                "bound_by": "ram" if by_ram <= by_disk else "disk",
                "workers": workers,
                "nodes_with_coordinator_and_replicas": (workers + 1) * (1 + REPLICAS),
                "index_gb_total": round(memories * bytes_per["index"] / GB, 1),
                "index_gb_per_worker": round(table_rows * bytes_per["index"] / GB, 1),
                "data_gb_total": round(memories * bytes_per["total"] / GB, 1),
                "search_user_scope": search_p50(search, 1000, int(table_rows)),
                "search_whole_tenant": search_p50(search, int(per_tenant), int(table_rows)),
            }
        )
        rows[-1]["search_p50_via_coordinator_ms"] = {
            scope: round(rows[-1][scope]["p50_ms"] + overhead["search"], 1)
            for scope in ("search_user_scope", "search_whole_tenant")
        }
    return {
        "bench": "capacity",
        "memories": memories,
        "tenants": tenants,
        "memories_per_tenant": per_tenant,
        "assumptions": {"ram_fraction": RAM_FRACTION, "disk_fraction": DISK_FRACTION, "replicas": REPLICAS},
        "bytes_per_memory": bytes_per,
        "store_p50_tenant_scope": store_p50(store, int(per_tenant)),
        "citus_overhead_ms": overhead,
        "nodes": rows,
        "inputs": {
            "storage": {
                "load_average": storage.get("load_average"),
                "sizes": [s["rows"] for s in storage["sizes"]],
            },
            "search_load_average": search.get("load_average"),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000_000)
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="the same (the script only reads results)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    report = plan(args.memories, args.tenants)
    per = report["bytes_per_memory"]
    print(
        f"{args.memories:,} memories, {args.tenants:,} tenants; {per['total']:.0f} B/memory "
        f"({per['index']:.0f} B in indexes) measured at {per['basis_rows']:,} rows"
    )
    for row in report["nodes"]:
        print(
            f"  {row['node']:<18} {row['memories_per_worker']:>12,}/worker ({row['bound_by']}) "
            f"{row['workers']:>3} workers, {row['nodes_with_coordinator_and_replicas']:>3} nodes, "
            f"index {row['index_gb_per_worker']} GB/worker, search p50 user "
            f"{row['search_user_scope']['p50_ms']} ms, whole tenant {row['search_whole_tenant']['p50_ms']} ms"
            f" (through the coordinator: +{report['citus_overhead_ms']['search']} ms)"
        )
    (RESULTS / "capacity.json").write_text(json.dumps(report, indent=2) + "\n")
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
