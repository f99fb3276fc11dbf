"""LoCoMo recall@k of retrieval ideas, brute force in numpy: the prototype behind the search defaults.

    python bench/locomo_ideas.py [--quick] [--json]

Every question of categories 1-4 ranks all turns of its conversation; a hit is any evidence turn in
the top k. Lexemes come from PostgreSQL's own `to_tsvector('english', ...)` (what the stored
tsvector holds), embeddings from `embed_texts` (all-MiniLM-L6-v2), cached under var/locomo_ideas/
so a rerun takes seconds. Each idea is one row; the end-to-end figures of the real pipeline come from
`manage.py evaluate_retrieval`. --quick uses the first 3 conversations. With --json the last line of
stdout is one JSON object; results are also written to bench/results/locomo_ideas.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import django
import numpy as np
from support import benchenv

ROOT = benchenv.ROOT

CACHE = ROOT / "var" / "locomo_ideas"
RESULTS = ROOT / "bench" / "results" / "locomo_ideas.json"
KS = (1, 5, 10, 20)


def lexeme_counts(texts: list[str]) -> list[dict[str, int]]:
    from django.db import connection

    out: list[dict[str, int]] = []
    sql = (
        "SELECT t.ord, (SELECT coalesce(jsonb_object_agg(lexeme, array_length(positions, 1)), '{}'::jsonb) "
        "FROM unnest(to_tsvector('english', t.x))) FROM unnest(%s::text[]) WITH ORDINALITY AS t(x, ord) "
        "ORDER BY t.ord"
    )
    with connection.cursor() as cursor:
        for start in range(0, len(texts), 500):
            cursor.execute(sql, [texts[start : start + 500]])
            out += [row[1] if isinstance(row[1], dict) else json.loads(row[1]) for row in cursor.fetchall()]
    return out


def embeddings(name: str, texts: list[str]) -> np.ndarray:
    from memory_app.embeddings import embed_texts

    path = CACHE / f"{name}.npy"
    if path.exists():
        cached = np.load(path)
        if cached.shape[0] == len(texts):
            return cached
    CACHE.mkdir(parents=True, exist_ok=True)
    vectors = embed_texts(texts, tenant=None)
    np.save(path, vectors)
    return vectors


def bm25(
    docs: list[dict[str, float]], idx: np.ndarray, query: dict[str, int], *, k1: float, b: float
) -> np.ndarray:
    """BM25 over one conversation; document length = distinct lexemes, as selectors/search/lexical.py."""
    sub = [docs[i] for i in idx]
    lengths = np.array([len(d) for d in sub], dtype=float)
    avg = lengths.mean()
    n = len(sub)
    out = np.zeros(n)
    for term in query:
        tf = np.array([d.get(term, 0.0) for d in sub])
        df = int((tf > 0).sum())
        if df:
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            out += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / avg))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = Path(ROOT).parent / "shared" / "data" / "locomo10.json"
    if not data.exists():
        print(f"skipped: {data} is absent", file=sys.stderr)
        if args.json:
            print(json.dumps({"skipped": f"{data} absent"}))
        return
    django.setup()
    from memory_eval.locomo import load_locomo, turn_text

    turns, questions = load_locomo(data)
    n = len(turns)
    variants = {
        "text": [t.text for t in turns],
        "caption": [turn_text(t, speaker=False) for t in turns],
        "speaker_caption": [turn_text(t) for t in turns],
    }
    lex = {name: lexeme_counts(texts) for name, texts in variants.items()}
    qlex = lexeme_counts([q.question for q in questions])
    vec = {name: embeddings(f"turns_{name}", texts) for name, texts in variants.items()}
    qvec = embeddings("questions", [q.question for q in questions])
    if args.quick:
        keep = [i for i, q in enumerate(questions) if q.conversation < 3]
        questions = [questions[i] for i in keep]
        qlex = [qlex[i] for i in keep]
        qvec = qvec[keep]
    by_conv: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(turns):
        by_conv[t.conversation].append(i)
    dia = [t.dia_id for t in turns]

    def neighbours(i: int, radius: int) -> list[int]:
        return [
            j
            for j in range(max(0, i - radius), min(n, i + radius + 1))
            if j != i
            and turns[j].conversation == turns[i].conversation
            and turns[j].session == turns[i].session
        ]

    def with_context(docs: list[dict[str, int]], weight: float, radius: int) -> list[dict[str, float]]:
        out = []
        for i in range(n):
            d = {k: float(v) for k, v in docs[i].items()}
            for j in neighbours(i, radius):
                for k, v in docs[j].items():
                    d[k] = d.get(k, 0.0) + weight * v
            out.append(d)
        return out

    def mixed(vectors: np.ndarray, weight: float, radius: int) -> np.ndarray:
        m = vectors.copy()
        for i in range(n):
            for j in neighbours(i, radius):
                m[i] += weight * vectors[j]
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    rows: list[dict] = []

    def evaluate(name: str, score: Callable[[int, np.ndarray], np.ndarray]) -> dict:
        hits = dict.fromkeys(KS, 0)
        cats: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for qi, q in enumerate(questions):
            idx = np.array(by_conv[q.conversation])
            order = idx[np.argsort(-score(qi, idx), kind="stable")]
            for k in KS:
                if any(dia[j] in q.evidence for j in order[:k]):
                    hits[k] += 1
            cats[q.category][0] += any(dia[j] in q.evidence for j in order[:10])
            cats[q.category][1] += 1
        row = {"idea": name, **{f"recall_at_{k}": round(hits[k] / len(questions), 3) for k in KS}}
        row["recall_at_10_by_category"] = {c: round(a / b, 3) for c, (a, b) in sorted(cats.items())}
        rows.append(row)
        print(f"{name:58s} " + " ".join(f"@{k}={row[f'recall_at_{k}']:.3f}" for k in KS), flush=True)
        return row

    def cosine(v: np.ndarray) -> Callable[[int, np.ndarray], np.ndarray]:
        return lambda qi, idx: v[idx] @ qvec[qi]

    def lexical(docs, k1=1.2, b=0.75) -> Callable[[int, np.ndarray], np.ndarray]:
        return lambda qi, idx: bm25(docs, idx, qlex[qi], k1=k1, b=b)

    evaluate("vector: turn text", cosine(vec["text"]))
    evaluate("vector: + image caption", cosine(vec["caption"]))
    evaluate("vector: + speaker name ('Speaker: text')", cosine(vec["speaker_caption"]))
    evaluate("vector: + neighbours mixed in (r=2, w=0.3)", cosine(mixed(vec["speaker_caption"], 0.3, 2)))
    evaluate("BM25: turn text", lexical(lex["text"]))
    evaluate("BM25: + caption + speaker", lexical(lex["speaker_caption"]))
    evaluate("BM25: k1=1.2 b=0.3", lexical(lex["speaker_caption"], b=0.3))
    base = lex["speaker_caption"]

    def smoothed(qi: int, idx: np.ndarray) -> np.ndarray:
        s = bm25(base, idx, qlex[qi], k1=1.2, b=0.75)
        out = s.copy()
        out[1:] += 0.3 * s[:-1]
        out[:-1] += 0.3 * s[1:]
        return out

    evaluate("BM25: neighbour score smoothing (0.3)", smoothed)
    for radius, weight in ((1, 0.5), (2, 0.2), (2, 0.5)):
        evaluate(
            f"BM25: + neighbour turns as context (r={radius}, w={weight})",
            lexical(with_context(base, weight, radius)),
        )
    ctx = with_context(base, 0.5, 2)
    spk = vec["speaker_caption"]

    def weighted(v: np.ndarray, a: float) -> Callable[[int, np.ndarray], np.ndarray]:
        def score(qi: int, idx: np.ndarray) -> np.ndarray:
            s = bm25(ctx, idx, qlex[qi], k1=1.2, b=0.75)
            return a * np.clip(v[idx] @ qvec[qi], 0, None) + (1 - a) * s / (s.max() or 1.0)

        return score

    def rrf(k: float, wv: float) -> Callable[[int, np.ndarray], np.ndarray]:
        def score(qi: int, idx: np.ndarray) -> np.ndarray:
            sv, sb = spk[idx] @ qvec[qi], bm25(ctx, idx, qlex[qi], k1=1.2, b=0.75)
            rv, rb = np.empty(len(idx)), np.empty(len(idx))
            rv[np.argsort(-sv)] = np.arange(1, len(idx) + 1)
            rb[np.argsort(-sb)] = np.arange(1, len(idx) + 1)
            return wv / (k + rv) + (1 - wv) / (k + rb) * (sb > 0)

        return score

    evaluate("hybrid RRF k=60 (equal weights)", rrf(60, 0.5))
    evaluate("hybrid RRF k=10, vector weight 0.4", rrf(10, 0.4))
    for a in (0.3, 0.5, 0.7):
        evaluate(f"hybrid weighted: {a} x cosine + {1 - a:.1f} x BM25/max", weighted(spk, a))
    evaluate("hybrid weighted 0.5 with neighbour-mixed vectors", weighted(mixed(spk, 0.3, 2), 0.5))
    report = {"questions": len(questions), "quick": args.quick, "rows": rows}
    benchenv.write_results(RESULTS, report, print_json=args.json)


if __name__ == "__main__":
    main()
