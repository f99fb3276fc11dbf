"""The load-time ranking pipeline (dedup verified by the offline judge -> DBSCAN -> MMR) on 50 results.

    python bench/pipeline.py [--quick] [--json] [--results 50] [--repeats N]

Exactly what `memory_search` runs after fusion (`memory_app.retrieval.pipeline.run_pipeline`), on
50 scored rows of 384 dimensions whose texts and vectors plant near-duplicate groups: every fifth
row has a reworded twin (cosine distance ~0.1, judged duplicate or refine), every seventh an
update of a number (distance ~0.1, judged update and kept apart), the rest are unrelated. No
database and no embedding model: this is the CPU cost of the pipeline itself. Stages are also
timed alone. With --json the last line of stdout is one JSON object; results are also written to
bench/results/pipeline.json.
"""

from __future__ import annotations

import argparse
import statistics
import time

import django
import numpy as np
from support import benchenv

ROOT = benchenv.ROOT

RESULTS = ROOT / "bench" / "results" / "pipeline.json"
SUBJECTS = ["Alice", "Bob", "Carol", "Dan", "Erin", "Fay", "Gus", "Hana", "Ivan", "Jo"]
FACTS = [
    "likes hiking in the mountains",
    "works as a nurse at the city hospital",
    "has a dog named Pepper",
    "is learning to play the violin",
    "drinks green tea every morning",
    "moved to Lisbon last spring",
    "volunteers at the food bank",
    "is allergic to peanuts",
]


def planted(n: int, seed: int = 7) -> tuple[list[str], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    vectors: list[np.ndarray] = []
    base = None
    for i in range(n):
        if i % 5 == 1 and base is not None:  # a reworded twin of the previous row
            texts.append(texts[-1] + " these days")
            v = vectors[-1] + 0.35 * rng.standard_normal(384) / np.sqrt(384) * 1.2
        elif i % 7 == 3 and base is not None:  # an update: same frame, another number
            texts.append(f"{SUBJECTS[i % 10]}'s BMI goal is {20 + i % 9}")
            v = vectors[-1] + 0.3 * rng.standard_normal(384) / np.sqrt(384)
        else:
            texts.append(f"{SUBJECTS[i % 10]} {FACTS[(i * 3) % len(FACTS)]} (note {i})")
            v = rng.standard_normal(384)
        base = v / np.linalg.norm(v)
        vectors.append(base)
    scores = np.sort(rng.random(n))[::-1]
    return texts, np.array(vectors, dtype=np.float32), scores


def timed(fn, repeats: int) -> list[float]:
    fn()  # warm caches (calibration file, regexes)
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--results", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=0)
    args = parser.parse_args()
    django.setup()
    from memory_app.judge.calibration.params import load_calibration
    from memory_app.judge.offline import OfflineJudge
    from memory_app.retrieval.clustering import cosine_distances, dbscan
    from memory_app.retrieval.dedup import clear_verdict_cache, dedup_groups
    from memory_app.retrieval.mmr import cosine_similarities, mmr_order
    from memory_app.retrieval.pipeline import run_pipeline

    repeats = args.repeats or (50 if args.quick else 300)
    texts, vectors, scores = planted(args.results)
    judge = OfflineJudge()
    review_below = load_calibration().review_below

    def full() -> object:
        return run_pipeline(
            texts=texts,
            embeddings=vectors,
            scores=scores,
            limit=args.results // 3,
            deduplicate=True,
            dedup_threshold=0.4,
            dedup_min_confidence=review_below,
            judge=judge,
            clustering=True,
            epsilon=0.15,
            min_points=2,
            mmr=True,
            mmr_lambda=0.7,
        )

    def cold() -> object:
        clear_verdict_cache()
        return full()

    outcome = full()
    rows = [
        {"stage": "dedup+clustering+mmr", **summary(timed(full, repeats))},
        {"stage": "same, verdicts uncached", **summary(timed(cold, repeats))},
        {
            "stage": "dedup (judge)",
            **summary(
                timed(
                    lambda: dedup_groups(
                        texts,
                        vectors,
                        threshold=0.4,
                        judge=judge,
                        min_confidence=review_below,
                    ),
                    repeats,
                )
            ),
        },
        {
            "stage": "dbscan",
            **summary(timed(lambda: dbscan(cosine_distances(vectors), epsilon=0.15, min_points=2), repeats)),
        },
        {
            "stage": "mmr",
            **summary(timed(lambda: mmr_order(scores, cosine_similarities(vectors), k=20), repeats)),
        },
    ]
    merged = sum(1 for e in outcome.entries if len(e.members) > 1)
    report = {
        "results": args.results,
        "repeats": repeats,
        "entries": len(outcome.entries),
        "merged_entries": merged,
        "rows": rows,
        "p50_ms": rows[0]["p50_ms"],
        "p99_ms": rows[0]["p99_ms"],
        "cold_p50_ms": rows[1]["p50_ms"],
        "target_p50_ms": 5.0,
        "quick": args.quick,
    }
    for row in rows:
        print(f"{row['stage']:22s} p50 {row['p50_ms']:7.3f} ms  p99 {row['p99_ms']:7.3f} ms")
    benchenv.write_results(RESULTS, report, print_json=args.json)


if __name__ == "__main__":
    main()
