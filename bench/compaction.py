"""Compaction candidate finding and grouping over a whole store, against planted truth.

    python bench/compaction.py [--quick] [--json] [--sizes 100000,1000000] [--reload] [--radius 0.45]

Memories with precomputed synthetic vectors (bench/support/compaction_data.py: a shared namespace, large
users and many users of ~1,000, with planted duplicate groups and chain bait) are loaded once per
size into their own database on the same server (`memory_bench_compaction_<rows>`; the HNSW and GIN
indexes are dropped there, compaction does not use them) and kept between runs.

Timed, scope by scope, exactly as `services.compaction.scope_compact` does it before the judge:
  read    `selectors.compaction.scope_vectors` (one COPY BINARY of the scope's active rows)
  pairs   `compaction.find_pairs` (exact blocked products up to COMPACTION_EXACT_MAX_ROWS rows,
          inverted lists above)
  group   `compaction.cohesive_groups`
"Candidate finding" = read + pairs. Not timed: data generation and loading, the truth check, the
relation judge (it runs per group, not per row). Peak memory is the process's maximum RSS.
`client_cpu_seconds` is this process's CPU time in the timed steps (excludes the server's side of
the read): on a shared machine wall time also counts time spent waiting for a core.
With --json the last line of stdout is one JSON object; results go to bench/results/compaction.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import django
import numpy as np
from support import benchenv
from support.benchdb import log, use_database
from support.compaction_data import DIM, scope_data, scope_plan

ROOT = benchenv.ROOT

RESULTS = ROOT / "bench" / "results" / "compaction.json"
TENANT = "bench-compaction"
STAGE_ROW = np.dtype(
    [
        ("nf", ">i2"),
        ("l1", ">i4"),
        ("scope", ">i4"),
        ("l2", ">i4"),
        ("fact", ">i8"),
        ("l3", ">i4"),
        ("dim", ">i2"),
        ("unused", ">i2"),
        ("vec", ">f4", (DIM,)),
    ]
)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def drop_service_indexes() -> None:
    """The bench times candidate finding, which reads vectors out; the service's HNSW and GIN
    indexes would only slow the load of a million rows."""
    from django.db import connection

    with connection.cursor() as cursor:
        for index in (
            "memory_embedding_hnsw",
            "memory_search_gin",
            "memory_topics_gin",
            "memory_entities_gin",
        ):
            cursor.execute(f"DROP INDEX IF EXISTS {index}")


def _stage_copy(cursor, scope_index: int, facts: np.ndarray, vectors: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    rows = np.zeros(len(facts), dtype=STAGE_ROW)
    rows["nf"], rows["l1"], rows["scope"], rows["l2"], rows["fact"] = 3, 4, scope_index, 8, facts
    rows["l3"], rows["dim"], rows["vec"] = 4 + 4 * DIM, DIM, vectors
    payload = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8 + rows.tobytes() + b"\xff\xff"
    with cursor.cursor.copy("COPY bench_stage (scope, fact, embedding) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(payload)


def load(total: int, seed: int, reload: bool) -> tuple[object, list[tuple[str, int]]]:
    from django.db import connection, transaction

    from memory_app.models import Memory, Tenant

    rng = np.random.default_rng(seed)
    plan = scope_plan(total, rng)
    label = f"bench {total} seed {seed} v2"  # v2: the generator's version; a change reloads
    tenant, _ = Tenant.objects.get_or_create(slug=TENANT, defaults={"name": label})
    if not reload and tenant.name == label and Memory.objects.filter(tenant=tenant).count() == total:
        log(f"reusing {total} memories in {connection.settings_dict['NAME']}")
        return tenant, plan
    started = time.perf_counter()
    with connection.cursor() as cursor:  # raw: the ORM would load every row to cascade
        cursor.execute("DELETE FROM memory_app_memory WHERE tenant_id = %s", [tenant.pk])
    Tenant.objects.filter(pk=tenant.pk).update(name=label)
    names = [name for name, _ in plan]
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_stage")
        cursor.execute("CREATE UNLOGGED TABLE bench_stage (scope int4, fact int8, embedding vector(384))")
        first_fact = 0
        for index, (name, rows) in enumerate(plan):
            data = scope_data(rng, name=name, rows=rows, first_fact=first_fact)
            first_fact = int(data.fact.max()) + 1
            _stage_copy(cursor, index, data.fact, data.vectors)
            if index % 100 == 0:
                log(f"  generated {index + 1}/{len(plan)} scopes")
        with transaction.atomic():
            cursor.execute(
                """
                INSERT INTO memory_app_memory (tenant_id, kind, user_id, agent_id, namespace, session_id,
                    text, text_hash, embedding, embedding_model, topics, entities, event_type, context,
                    category, fact_type, source, metadata, created_at, updated_at, pinned, status,
                    access_count, helpful_count, harmful_count, confidence)
                SELECT %s, CASE WHEN s.scope = 0 THEN 'semantic' ELSE 'episodic' END,
                    CASE WHEN s.scope = 0 THEN '' ELSE (%s::text[])[s.scope + 1] END, '',
                    CASE WHEN s.scope = 0 THEN 'knowledge' ELSE 'default' END, '',
                    'fact ' || s.fact || ' row ' || s.ctid::text, md5(s.ctid::text), s.embedding, 'bench',
                    '{}', '{}', '', '', '', '', '', '{}', now(), now(), false, 'active', 0, 0, 0, 0.5
                FROM bench_stage s ORDER BY s.scope, s.ctid
                """,
                [tenant.pk, names],
            )
        cursor.execute("DROP TABLE bench_stage")
        cursor.execute("VACUUM ANALYZE memory_app_memory")
    log(f"loaded {total} memories in {time.perf_counter() - started:.0f} s")
    return tenant, plan


def fact_of(tenant, scope) -> dict[int, int]:  # type: ignore[no-untyped-def]
    from memory_app.models import Memory

    rows = Memory.objects.filter(
        tenant=tenant, user_id=scope.user_id, namespace=scope.namespace, kind=scope.kind
    ).values_list("pk", "text")
    return {pk: int(text.split()[1]) for pk, text in rows}


def union_groups(left: np.ndarray, right: np.ndarray, n: int) -> list[tuple[int, ...]]:
    """Plain connected components of the pairs (the chaining baseline the benchmark compares to)."""
    parent = np.arange(n)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = int(parent[i])
        return i

    for a, b in zip(left, right, strict=True):
        ra, rb = find(int(a)), find(int(b))
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    components: dict[int, list[int]] = {}
    for i in {int(x) for x in np.concatenate([left, right])} if len(left) else set():
        components.setdefault(find(i), []).append(i)
    return [tuple(sorted(c)) for c in components.values() if len(c) > 1]


def run_size(total: int, seed: int, radius: float, reload: bool) -> dict[str, object]:
    from django.conf import settings

    from memory_app.compaction import cohesive_groups, find_pairs
    from memory_app.selectors.compaction import compaction_scopes, scope_vectors

    use_database(f"memory_bench_compaction_{total}", migrate=True)
    drop_service_indexes()
    tenant, _plan = load(total, seed, reload)
    timings = {"read": 0.0, "pairs": 0.0, "group": 0.0}
    counts = {"scopes": 0, "rows": 0, "pairs_examined": 0, "pairs": 0, "groups": 0, "exact_scopes": 0}
    truth = {"planted": 0, "recovered": 0, "spanning": 0, "union_spanning": 0}
    largest_ivf: tuple[int, float] | None = None
    cpu = 0.0  # this process's CPU time in the timed steps: less sensitive to a busy machine
    for scope, _count in compaction_scopes(tenant=tenant):
        c0 = time.process_time()
        t0 = time.perf_counter()
        ids, vectors = scope_vectors(tenant=tenant, scope=scope)
        t1 = time.perf_counter()
        pairs = find_pairs(
            vectors,
            radius=radius,
            exact_max_rows=settings.COMPACTION_EXACT_MAX_ROWS,
            blas_threads=settings.COMPACTION_BLAS_THREADS or None,
        )
        t2 = time.perf_counter()
        groups = cohesive_groups(
            pairs.left, pairs.right, pairs.distance, max_group_size=settings.COMPACTION_MAX_GROUP_SIZE
        )
        t3 = time.perf_counter()
        cpu += time.process_time() - c0
        timings["read"] += t1 - t0
        timings["pairs"] += t2 - t1
        timings["group"] += t3 - t2
        counts["scopes"] += 1
        counts["rows"] += len(ids)
        counts["pairs_examined"] += pairs.examined
        counts["pairs"] += len(pairs)
        counts["groups"] += len(groups)
        counts["exact_scopes"] += pairs.method == "exact"
        if pairs.method == "ivf":
            largest_ivf = max(largest_ivf or (0, 0.0), (len(ids), t2 - t1))
        # Truth (not timed): every fact with two or more rows is a planted group.
        facts = fact_of(tenant, scope)
        fact_by_row = np.array([facts[int(i)] for i in ids])
        by_fact: dict[int, set[int]] = {}
        for row, f in enumerate(fact_by_row):
            by_fact.setdefault(int(f), set()).add(row)
        planted = {tuple(sorted(rows)) for rows in by_fact.values() if len(rows) > 1}
        found = {g.members for g in groups}
        truth["planted"] += len(planted)
        truth["recovered"] += len(planted & found)
        truth["spanning"] += sum(len({int(fact_by_row[i]) for i in g}) > 1 for g in found)
        union = union_groups(pairs.left, pairs.right, len(ids))
        truth["union_spanning"] += sum(len({int(fact_by_row[i]) for i in g}) > 1 for g in union)
    candidate = timings["read"] + timings["pairs"]
    result = {
        "memories": total,
        "radius": radius,
        "exact_max_rows": settings.COMPACTION_EXACT_MAX_ROWS,
        "seconds": {k: round(v, 2) for k, v in timings.items()},
        "candidate_finding_seconds": round(candidate, 2),
        "candidate_finding_and_grouping_seconds": round(candidate + timings["group"], 2),
        "client_cpu_seconds": round(cpu, 2),
        **counts,
        "pairs_examined_share": round(counts["pairs_examined"] / max(1, sum_pairs_if_exact(tenant)), 4),
        **truth,
        "recovered_share": round(truth["recovered"] / max(1, truth["planted"]), 4),
        "largest_ivf_scope": None
        if largest_ivf is None
        else {"rows": largest_ivf[0], "pairs_seconds": round(largest_ivf[1], 2)},
        "peak_rss_mb": round(peak_rss_mb()),
        "blas_threads": settings.COMPACTION_BLAS_THREADS or os.cpu_count(),
        "load_average": os.getloadavg()[0],
    }
    log(json.dumps(result))
    return result


def sum_pairs_if_exact(tenant) -> int:  # type: ignore[no-untyped-def]
    from memory_app.selectors.compaction import compaction_scopes

    return sum(n * (n - 1) // 2 for _, n in compaction_scopes(tenant=tenant))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="20 k memories only (under a minute)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated totals")
    parser.add_argument(
        "--radius", type=float, default=None, help="cosine-distance radius (default: setting)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reload", action="store_true", help="regenerate and reload the data")
    parser.add_argument(
        "--blas-threads", type=int, default=None, help="override COMPACTION_BLAS_THREADS (0: all cores)"
    )
    parser.add_argument(
        "--exact-max-rows", type=int, default=None, help="override COMPACTION_EXACT_MAX_ROWS (quick: 2000)"
    )
    args = parser.parse_args()
    django.setup()
    from django.conf import settings
    from django.test import override_settings

    radius = args.radius or settings.COMPACTION_RADIUS
    # --quick lowers the exact limit so its small scopes exercise the inverted lists too.
    overrides: dict[str, int] = {
        "COMPACTION_EXACT_MAX_ROWS": args.exact_max_rows
        or (2000 if args.quick else settings.COMPACTION_EXACT_MAX_ROWS)
    }
    if args.blas_threads is not None:
        overrides["COMPACTION_BLAS_THREADS"] = args.blas_threads
    # Through override_settings, whose signal drops the cached config objects (memory_app/conf/).
    override_settings(**overrides).enable()
    sizes = [20_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    results = [run_size(total, args.seed, radius, args.reload) for total in sizes]
    report = {
        "benchmark": "compaction",
        "quick": args.quick,
        "cpu_count": os.cpu_count(),
        "targets": {
            "candidate_finding_100k_s": 10,
            "candidate_finding_1m_s": 120,
            "recovered": 0.95,
            "peak_mb": 2048,
        },
        "results": results,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    out = RESULTS if not args.quick else RESULTS.with_name("compaction_quick.json")
    out.write_text(json.dumps(report, indent=2) + "\n")
    for r in results:
        sec = r["seconds"]
        print(
            f"{r['memories']:>9} memories, {r['scopes']} scopes: "
            f"candidate finding {r['candidate_finding_seconds']} s "
            f"(read {sec['read']} s, pairs {sec['pairs']} s), grouping {sec['group']} s; "
            f"{r['pairs_examined']} pairs examined ({r['pairs_examined_share']:.1%} of all), "
            f"{r['pairs']} within radius; planted groups recovered {r['recovered']}/{r['planted']} "
            f"({r['recovered_share']:.1%}), spanning two facts {r['spanning']} "
            f"(union of pairs: {r['union_spanning']}); peak RSS {r['peak_rss_mb']} MB"
        )
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
