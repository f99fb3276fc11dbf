"""The offline judge's own cost per store on a real fact stream (no database).

    python bench/judge_cost.py [--quick] [--json] [--conversations 0-4] [--tokens-from-embedding]
        [--stored-tokens]

LoCoMo observations of conversations 0-4 (the development set), one scope per speaker, in their
order. For each fact the judge meets what the store path hands it: up to 5 earlier facts of the
same speaker within the calibrated candidate radius, nearest first. The sentence vectors are computed
before timing (the store path has them already); the token model behind the word alignment starts
cold, as in a fresh worker, so every text's token vectors are computed once inside the timed calls.
Reports the judge time per store (all stores and stores with candidates), the share of stores that
ran the token model, and the load average. --quick: conversation 0 only. --tokens-from-embedding:
the sentence vectors are computed with the token encoder in place, so each text's token vectors come
from the forward pass that embedded it, as on the store path when the service embeds the text (a
worker that embedded every earlier fact itself); the judge then runs the model only for texts that
forward pass could not serve. --stored-tokens: as the store path runs with stored token rows
(models.MemoryTokens): the new fact's vectors come from the forward pass that embedded it, and every
earlier fact's from its stored row (the float16 bytes the store wrote, decoded inside the timed
call; the one database read per store, ~0.3 ms, is not included), each store on a worker that has
seen none of the earlier facts (a cold encoder per store: the case the rows are for), so the model
runs only for a text neither can serve. Results go to
bench/results/judge_cost.json; with --json the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import time

import django
import numpy as np
from support import benchenv

ROOT = benchenv.ROOT
RESULTS = ROOT / "bench" / "results" / "judge_cost.json"
CANDIDATES = 5


def stream(path: str, conversations: list[int]) -> list[tuple[str, str]]:
    """(scope, fact) in the conversations' order: sessions in order, speakers as the file lists them."""
    with open(path) as handle:
        data = json.load(handle)
    out = []
    for index in conversations:
        observation = data[index]["observation"]
        sessions = sorted(
            (key for key in observation if key.endswith("_observation")),
            key=lambda key: int(key.split("_")[1]),
        )
        for key in sessions:
            for speaker, facts in observation[key].items():
                out += [(f"{index}:{speaker}", fact[0]) for fact in facts if fact and fact[0].strip()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--conversations", default="0-4")
    parser.add_argument("--tokens-from-embedding", action="store_true")
    parser.add_argument("--stored-tokens", action="store_true")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "locomo10.json"))
    args = parser.parse_args()
    django.setup()
    from memory_app.embeddings.local import local_embed
    from memory_app.judge import JudgeItem
    from memory_app.judge.calibration.params import load_calibration
    from memory_app.judge.offline import OfflineJudge
    from memory_app.judge.signals import alignment

    first, _, last = args.conversations.partition("-")
    conversations = [0] if args.quick else list(range(int(first), int(last or first) + 1))
    facts = stream(args.data, conversations)
    alignment._encoder = alignment.TokenEncoder()  # cold, as a fresh worker
    vectors = local_embed([text for _, text in facts])
    rows: dict[str, tuple[int, bytes]] = {}
    if args.stored_tokens:
        # What the store path wrote for each fact: the vectors of the forward pass that embedded it.
        texts = [text for _, text in facts]
        for text, tokens in zip(texts, alignment.TokenEncoder().tokens(texts), strict=True):
            rows[text] = (len(tokens.stems), alignment.tokens_bytes(tokens))
        alignment._encoder = alignment.TokenEncoder()
    elif not args.tokens_from_embedding:
        alignment._encoder = alignment.TokenEncoder()  # what that forward pass offered is dropped
    stored: set[str] = set()

    def source(texts: list[str]) -> dict:
        return {t: alignment.tokens_from_bytes(t, *rows[t]) for t in texts if t in stored}

    cal = load_calibration("all-MiniLM-L6-v2")
    judge = OfflineJudge(cal)
    encoded_total = loaded_total = 0
    per_store: list[float] = []
    with_candidates: list[float] = []
    token_runs = 0
    seen: dict[str, list[int]] = {}
    for index, (scope, text) in enumerate(facts):
        earlier = seen.setdefault(scope, [])
        candidates = []
        if earlier:
            distances = 1.0 - vectors[earlier] @ vectors[index]
            order = np.argsort(distances)[:CANDIDATES]
            candidates = [
                JudgeItem(facts[earlier[i]][1], vectors[earlier[i]], distance=float(distances[i]))
                for i in order
                if distances[i] <= cal.candidate_radius
            ]
        new = JudgeItem(text, vectors[index])
        if args.stored_tokens:
            # A worker that has seen none of the earlier facts (their vectors are in their rows);
            # the new fact's own forward pass offers its vectors, as local_embed does.
            alignment._encoder = alignment.TokenEncoder()
            alignment._encoder.offer({text: alignment.tokens_from_bytes(text, *rows[text])})
        encoded_before, loaded_before = alignment._encoder.encoded, alignment._encoder.loaded
        start = time.perf_counter()
        if candidates:
            with alignment.stored_tokens(source) if args.stored_tokens else contextlib.nullcontext():
                judge.judge(new, candidates)
        elapsed = (time.perf_counter() - start) * 1000
        stored.add(text)
        per_store.append(elapsed)
        if candidates:
            with_candidates.append(elapsed)
        encoded = alignment._encoder.encoded - encoded_before
        token_runs += encoded > 0
        encoded_total += encoded
        loaded_total += alignment._encoder.loaded - loaded_before
        earlier.append(index)
    report = {
        "benchmark": "judge_cost",
        "conversations": conversations,
        "stores": len(per_store),
        "stores_with_candidates": len(with_candidates),
        "judge_ms_per_store_mean": round(statistics.fmean(per_store), 3),
        "judge_ms_per_store_p50": round(statistics.median(per_store), 3),
        "judge_ms_with_candidates_p50": round(statistics.median(with_candidates or [0.0]), 3),
        "judge_ms_with_candidates_p95": round(float(np.percentile(with_candidates or [0.0], 95)), 3),
        "share_of_stores_running_token_model": round(token_runs / len(per_store), 4),
        "tokens_from_embedding": args.tokens_from_embedding,
        "stored_tokens": args.stored_tokens,
        "texts_token_loaded": loaded_total,
        "texts_token_encoded": encoded_total,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(
        f"{report['stores']} stores: judge {report['judge_ms_per_store_mean']} ms mean, "
        f"{report['judge_ms_with_candidates_p50']} ms p50 with candidates; "
        f"token model ran on {report['share_of_stores_running_token_model']:.0%} of stores; "
        f"load {report['load_average']}"
    )
    benchenv.write_results(RESULTS, report, print_json=args.json)


if __name__ == "__main__":
    main()
