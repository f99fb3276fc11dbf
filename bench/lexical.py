"""BM25 on a large scope at each SEARCH_BM25_ROW_BUDGET: its cost, its top k against full BM25, and
what hybrid search finds with it.

    python bench/lexical.py [--quick] [--json] [--budgets 100000000,1000,500]

On bench/peer.py's scope (`memory_bench_peer_<rows>`, loaded by that bench when missing: STS-B
sentences under pseudo-word names, real MiniLM vectors). The queries are sentences past the corpus
("<sentence> (<name>)"); the corpus repeats each sentence under many names, so the rows holding a
query's sentence are its relevant rows. Per budget, over the same queries:
- `bm25_ms`: p50 / mean of `bm25_candidates` (k = SEARCH_CANDIDATES);
- `within_ties_at_10` / `_at_k`: the share of its top 10 / top k whose full-BM25 score (every row
  holding any query word scored) reaches full BM25's 10th / k-th score (ties count as agreement);
- `hybrid_same_sentence_recall_at_10`: default hybrid search's top 10 against the relevant rows
  (at most 10 needed); `hybrid_top10_agreement` with the first budget's top 10; `hybrid_ms` p50,
  the query's vector given (embedded once beforehand, so the budgets differ only in BM25).
--quick: 10 k rows, 20 queries. Results in bench/results/lexical[_quick].json.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import django
from support import benchenv, peer_data, peer_scale
from support.benchdb import log

RESULTS = benchenv.ROOT / "bench" / "results" / "lexical.json"
RESULTS_QUICK = benchenv.ROOT / "bench" / "results" / "lexical_quick.json"
# Past the corpus and past what bench/peer.py takes from the same source.
QUERY_OFFSET = 300_000
WARM_UP = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 k rows, 20 queries")
    parser.add_argument("--json", action="store_true", help="last line of stdout: one JSON object")
    parser.add_argument("--rows", type=int, help="scope size (default 100000; quick 10000)")
    parser.add_argument("--queries", type=int, help="default 60; quick 20")
    parser.add_argument("--budgets", default="100000000,1000,500", help="SEARCH_BM25_ROW_BUDGET values")
    args = parser.parse_args()
    django.setup()
    rows = args.rows or (10_000 if args.quick else 100_000)
    count = args.queries or (20 if args.quick else 60)
    budgets = [int(b) for b in args.budgets.split(",")]
    report = measure(rows=rows, count=count, budgets=budgets)
    report.update(bench="lexical", quick=args.quick)
    for budget, row in report["by_budget"].items():
        log(f"budget {budget}: {row}")
    benchenv.write_results(RESULTS_QUICK if args.quick else RESULTS, report, print_json=args.json)


def measure(*, rows: int, count: int, budgets: list[int]) -> dict[str, Any]:
    from django.test import override_settings

    from memory_app.conf import search_config
    from memory_app.selectors.search import lexical
    from memory_app.selectors.search.query import SearchFilters, memory_search, query_embedding_of

    mem0 = peer_scale.Mem0(f"memory_bench_peer_mem0_{rows}")
    try:
        tenant = peer_scale.prepare_size(rows, mem0, corpus=peer_data.corpus(rows, log=log))
    finally:
        mem0.close()
    _, asked = peer_data.incoming(0, count + WARM_UP, after=QUERY_OFFSET)
    warm_up, queries = asked[:WARM_UP], asked[WARM_UP:]
    filters = SearchFilters(user_id=peer_scale.SCOPE)
    from project.warmup import embedding_warmup

    embedding_warmup()  # the model, the judge's tables, dateparser: what a server loads first
    for query in warm_up:  # the table statistics and this process's first statements
        memory_search(tenant=tenant, query=query, filters=filters, limit=10)
    config = search_config()
    k = config.candidates
    weights = {"k1": config.bm25_k1, "b": config.bm25_b, "weight_b": config.context_weight}
    full = {q: full_bm25(tenant, filters, q, weights) for q in queries}
    # Each query embedded once, so every budget's searches cost the same but for BM25.
    vectors = {q: query_embedding_of(q, tenant) for q in queries}
    relevant = {q: peer_data.stating_rows(tenant.pk, q) for q in queries}
    # One pass of every search first: the judge's per-text readings (cached per process) are then
    # warm for every budget alike, not only for the budgets measured after the first.
    for query in queries:
        memory_search(tenant=tenant, query=query, filters=filters, limit=10, query_embedding=vectors[query])
    out: dict[str, Any] = {"rows": rows, "queries": count, "k": k, "by_budget": {}}
    first: dict[str, list[int]] | None = None
    for budget in budgets:
        with override_settings(SEARCH_BM25_ROW_BUDGET=budget):
            lexical.forget_scope_stats()
            bm25_ms, ties10, ties_k = [], [], []
            for query in queries:
                started = time.perf_counter()
                found = lexical.bm25_candidates(tenant=tenant, filters=filters, query=query, k=k, **weights)
                bm25_ms.append((time.perf_counter() - started) * 1000)
                ids = [c.memory_id for c in found]
                ties10 += within_ties(ids, full[query], 10)
                ties_k += within_ties(ids, full[query], k)
            hybrid_ms, recall, tops = [], [], {}
            for query in queries:
                started = time.perf_counter()
                hits = memory_search(
                    tenant=tenant, query=query, filters=filters, limit=10, query_embedding=vectors[query]
                ).hits
                hybrid_ms.append((time.perf_counter() - started) * 1000)
                tops[query] = [hit.memory.pk for hit in hits]
                if relevant[query]:
                    recall.append(len(set(tops[query]) & relevant[query]) / min(10, len(relevant[query])))
        first = first or tops
        agreement = [len(set(tops[q]) & set(first[q])) / max(1, len(first[q])) for q in queries]
        out["by_budget"][str(budget)] = {
            "bm25_ms": {
                "p50": round(statistics.median(bm25_ms), 2),
                "mean": round(statistics.mean(bm25_ms), 2),
            },
            "within_ties_at_10": round(statistics.mean(ties10), 3) if ties10 else None,
            "within_ties_at_k": round(statistics.mean(ties_k), 3) if ties_k else None,
            "hybrid_same_sentence_recall_at_10": round(statistics.mean(recall), 3) if recall else None,
            "hybrid_top10_agreement": round(statistics.mean(agreement), 3),
            "hybrid_ms_p50": round(statistics.median(hybrid_ms), 2),
        }
    return out


def full_bm25(tenant: Any, filters: Any, query: str, weights: dict[str, float]) -> dict[int, float]:
    """Full BM25 (every row holding any query word scored) of the rows it ranks, by id."""
    from memory_app.selectors.search import lexical
    from memory_app.selectors.search.candidates import filter_sql

    where, params = filter_sql(tenant=tenant, filters=filters)
    whole = lexical._Bm25(where=where, params=params, k=20_000, tenant_id=tenant.pk, **weights)
    return {row[0]: float(row[1]) for row in lexical._whole_match(whole, query=query, key="", cached=None)}


def within_ties(ids: list[int], full: dict[int, float], k: int) -> list[float]:
    """One value for a query whose full BM25 ranks at least k rows: the share of `ids[:k]` scoring
    at least full BM25's k-th score."""
    ranked = sorted(full.values(), reverse=True)
    if len(ranked) < k:
        return []
    bar = ranked[k - 1] - 1e-9
    return [sum(1 for i in ids[:k] if full.get(i, float("-inf")) >= bar) / k]


if __name__ == "__main__":
    main()
