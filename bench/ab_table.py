"""Compare two commits' results from bench/ab.sh: the headline figures side by side (markdown) and,
per bench, the geometric mean of after/before over every p50 figure, so a shift in one direction
stands out from scatter in both.

    python bench/ab_table.py bench/results/ab/LABEL COMMIT_A COMMIT_B
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCHES = [
    "store",
    "search",
    "context",
    "compaction",
    "judge_cost",
    "embedding_cache",
    "pipeline",
    "mcp",
    "load",
    "storage",
]

# (bench, figure, path into its JSON): the figures each section of PERFORMANCE.md quotes.
HEADLINES: list[tuple[str, str, list[str | int]]] = [
    ("store", "synthetic plain p50 ms, 1st size", ["sizes", 0, "plain", "p50_ms"]),
    ("store", "synthetic dedup p50 ms, 1st size", ["sizes", 0, "dedup", "p50_ms"]),
    ("store", "synthetic plain p50 ms, 2nd size", ["sizes", 1, "plain", "p50_ms"]),
    ("store", "synthetic dedup p50 ms, 2nd size", ["sizes", 1, "dedup", "p50_ms"]),
    ("store", "real plain p50 ms, 2nd size", ["sizes", 1, "real", "plain", "p50_ms"]),
    ("store", "real dedup p50 ms, 2nd size", ["sizes", 1, "real", "dedup", "p50_ms"]),
    ("search", "user ~1k, exact, p50 ms", ["rows", 0, "p50_ms"]),
    ("search", "row 13 (largest scope) p50 ms", ["rows", 13, "p50_ms"]),
    ("context", "specific p50 ms, 1st size", ["sizes", 0, "specific", "p50_ms"]),
    ("context", "common p50 ms, 1st size", ["sizes", 0, "common", "p50_ms"]),
    ("context", "specific p50 ms, 2nd size", ["sizes", 1, "specific", "p50_ms"]),
    ("context", "common p50 ms, 2nd size", ["sizes", 1, "common", "p50_ms"]),
    ("compaction", "candidate finding s (20 k)", ["results", 0, "candidate_finding_seconds"]),
    ("compaction", "planted groups recovered", ["results", 0, "recovered_share"]),
    ("judge_cost", "judge ms per store p50", ["judge_ms_per_store_p50"]),
    ("embedding_cache", "one text, local model, p50 ms", ["local_model", "single_p50_ms"]),
    ("embedding_cache", "exact hit p50 ms", ["exact_hit", "p50_ms"]),
    ("pipeline", "dedup+clustering+MMR p50 ms", ["p50_ms"]),
    ("mcp", "MCP overhead p50 ms", ["overhead_p50_ms"]),
    ("load", "requests/s", ["requests_per_second"]),
    ("load", "server CPU ms per request", ["cpu_ms_per_request", "server"]),
    ("load", "acknowledged stores missing", ["acknowledged_missing"]),
    ("storage", "bytes per memory", ["sizes", 0, "bytes_per_memory", "total"]),
]


def _read(folder: Path, commit: str, bench: str) -> Any:
    try:
        return json.loads((folder / f"{commit}.{bench}.json").read_text())
    except (OSError, ValueError):
        return None


def _at(data: Any, path: list[str | int]) -> Any:
    for key in path:
        if isinstance(key, int):
            data = data[key] if isinstance(data, list) and key < len(data) else None
        else:
            data = data.get(key) if isinstance(data, dict) else None
    return data


def _numbers(data: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _numbers(value, f"{prefix}.{key}" if prefix else key)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _numbers(value, f"{prefix}[{i}]")
    elif isinstance(data, int | float) and not isinstance(data, bool):
        yield prefix, float(data)


def _p50_ratios(before: Any, after: Any) -> list[float]:
    a, b = dict(_numbers(before)), dict(_numbers(after))
    return [
        b[k] / a[k]
        for k in a
        if k in b and k.split(".")[-1].startswith("p50") and "phases" not in k and a[k] > 0 and b[k] > 0
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", type=Path)
    parser.add_argument("before")
    parser.add_argument("after")
    args = parser.parse_args()
    print(f"| bench | figure | before ({args.before}) | after ({args.after}) |\n|---|---|---|---|")
    for bench, name, path in HEADLINES:
        before = _at(_read(args.folder, args.before, bench), path)
        after = _at(_read(args.folder, args.after, bench), path)
        print(f"| {bench} | {name} | {before} | {after} |")
    print("\n| bench | p50 figures | after/before, geometric mean | lowest | highest |")
    print("|---|---|---|---|---|")
    for bench in BENCHES:
        ratios = _p50_ratios(_read(args.folder, args.before, bench), _read(args.folder, args.after, bench))
        if ratios:
            mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            print(f"| {bench} | {len(ratios)} | {mean:.2f} | {min(ratios):.2f} | {max(ratios):.2f} |")


if __name__ == "__main__":
    main()
