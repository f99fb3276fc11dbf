"""The relation judge's decisions under each stored form of the word vectors, item by item.

    python bench/token_codec.py [--quick] [--json] [--codecs float16,int8,int7,int6,int4]

The judge's word alignment reads content-word vectors (judge/signals/alignment.py), quantised at
the source to the form the database keeps (models.MemoryTokens). This runs every decision the dev
data asks of the judge once per form, each in a fresh process, through the real store path
(`memory_store` in scratch tenants, deleted afterwards): both pair files (the decision and whether
a merge kept the richer text, per pair), the scenarios (each scenario's texts stored in order in
a scope of their own: the outcome of each text and the text it joined) and the LoCoMo observation
stream of conversations 0-4, scope speaker (the outcome of each fact, the fact it joined, and the
text the memory holds at the end). It reports, per form, its bytes per word and how many items
decide otherwise than with `float16` (the form the judge was tuned with), naming them.
--quick: the pair files and the scenarios only.
Results: bench/results/token_codec.json; with --json the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from support import benchenv

ROOT = benchenv.ROOT
RESULTS = ROOT / "bench" / "results" / "token_codec.json"
DATA = ROOT.parent / "shared" / "data"
PAIR_FILES = ("memory_pairs_dev.jsonl", "memory_stream_pairs_dev.jsonl")
SCENARIOS = "memory_scenarios_dev.jsonl"
LOCOMO = "locomo10.json"
# Bytes a word's vector takes in each form (int4 would pack two codes a byte).
WORD_BYTES = {"float16": 768, "int8": 386, "int7": 338, "int6": 290, "int4": 194}
# The narrower integer forms: the largest code (int7 and int6 would pack 7 or 6 bits a code).
CODE_MAX = {"int7": 63, "int6": 31, "int4": 7}


def use_codec(name: str) -> None:
    """Quantise the token vectors to `name` at the source (alignment._word_vectors)."""
    import numpy as np

    from memory_app.judge.signals import alignment

    if name == "float16":

        def quantised(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, alignment.TOKEN_DIMENSIONS)
            return np.zeros(len(vectors), dtype=np.float16), vectors.astype(np.float16)

        def dequantised(scales: np.ndarray, codes: np.ndarray) -> np.ndarray:
            return codes.astype(np.float32)

        # The stored rows are of another size than the int8 reader expects: ignored, recomputed.
        alignment.quantised, alignment.dequantised = quantised, dequantised  # type: ignore[assignment]
    elif name in CODE_MAX:
        alignment.CODE_MAX = CODE_MAX[name]
    elif name != "int8":
        raise SystemExit(f"unknown codec {name}")


def pair_decisions(path: Path) -> dict[str, list]:
    from memory_eval.dedup import evaluate_pairs, load_pairs

    results, _ = evaluate_pairs(pairs=load_pairs(path))
    return {r.pair.id: [r.decision, r.kept_richer] for r in results}


def _outcomes(tenant, items, position: dict[int, int]) -> list[list]:  # type: ignore[no-untyped-def]
    """Store `items` one by one; per item its outcome and the position of the item it joined."""
    from memory_app.overrides import StoreOverrides
    from memory_app.services.store.write import memory_store

    out = []
    for index, item in enumerate(items):
        [outcome] = memory_store(tenant=tenant, items=[item], options=StoreOverrides())
        position.setdefault(outcome.memory_id, index)
        out.append([outcome.outcome, position[outcome.memory_id]])
    return out


def scenario_decisions(path: Path) -> dict[str, list]:
    from memory_app.embeddings import embed_texts
    from memory_app.models import Tenant
    from memory_app.services.store.types import MemoryInput

    scenarios = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    tenant = Tenant.objects.create(name="token_codec scenarios", slug=f"codec-{uuid.uuid4().hex[:12]}")
    found = {}
    try:
        for scenario in scenarios:
            vectors = embed_texts(scenario["texts"], tenant=None)
            items = [
                MemoryInput(text=text, embedding=vector, user_id=f"scenario-{scenario['id']}")
                for text, vector in zip(scenario["texts"], vectors, strict=True)
            ]
            found[scenario["id"]] = _outcomes(tenant, items, {})
    finally:
        tenant.delete()
    return found


def stream_decisions(path: Path) -> dict[str, list]:
    from memory_app.embeddings import embed_texts
    from memory_app.models import Memory, Tenant
    from memory_app.services.store.types import MemoryInput
    from memory_eval.stream import load_stream, namespace_of, user_of

    facts, _ = load_stream(path, source="observations", conversations=[0, 1, 2, 3, 4])
    vectors = embed_texts([f.text for f in facts], tenant=None)
    items = [
        MemoryInput(
            text=fact.text,
            user_id=user_of(fact, "speaker"),
            namespace=namespace_of(fact.conversation),
            session_id=f"session-{fact.session}",
            event_date=fact.date,
            source="locomo",
            embedding=vector,
        )
        for fact, vector in zip(facts, vectors, strict=True)
    ]
    tenant = Tenant.objects.create(name="token_codec stream", slug=f"codec-{uuid.uuid4().hex[:12]}")
    position: dict[int, int] = {}
    try:
        outcomes = _outcomes(tenant, items, position)
        texts = dict(Memory.objects.filter(tenant=tenant).values_list("pk", "text"))
    finally:
        tenant.delete()
    first = {index: memory_id for memory_id, index in position.items()}
    return {
        str(index): [outcome, joined, texts.get(first[joined])]
        for index, (outcome, joined) in enumerate(outcomes)
    }


def one(codec: str, quick: bool) -> dict:
    import django

    django.setup()
    use_codec(codec)
    t0 = time.perf_counter()
    found = {name: pair_decisions(DATA / name) for name in PAIR_FILES}
    found[SCENARIOS] = scenario_decisions(DATA / SCENARIOS)
    if not quick:
        found["locomo 0-4 observations, scope speaker"] = stream_decisions(DATA / LOCOMO)
    return {"decisions": found, "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="pair files and scenarios only")
    parser.add_argument("--json", action="store_true", help="last line of stdout: one JSON object")
    parser.add_argument(
        "--codecs", default="float16,int8,int7,int6,int4", help="forms to compare (float16 first)"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child process of one form
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.quick)))
        return
    codecs = args.codecs.split(",")
    if codecs[0] != "float16":
        codecs.insert(0, "float16")
    runs = {}
    for codec in codecs:
        command = [sys.executable, __file__, "--one", codec] + (["--quick"] if args.quick else [])
        done = subprocess.run(command, capture_output=True, text=True, env=os.environ, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{codec}: {done.stderr[-2000:]}")
        runs[codec] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{codec}: {runs[codec]['seconds']} s", file=sys.stderr)
    base = runs["float16"]["decisions"]
    forms = {}
    for codec, run in runs.items():
        differ = {
            source: sorted(key for key in items if run["decisions"][source].get(key) != items[key])
            for source, items in base.items()
        }
        forms[codec] = {
            "bytes_per_word": WORD_BYTES[codec],
            "items": {source: len(items) for source, items in run["decisions"].items()},
            "differ": {source: len(keys) for source, keys in differ.items()},
            "differing_items": {source: keys for source, keys in differ.items() if keys},
            "seconds": run["seconds"],
        }
        print(f"{codec:>8}: {WORD_BYTES[codec]} B/word, differing {forms[codec]['differ']}", file=sys.stderr)
    report = {
        "bench": "token_codec",
        "quick": args.quick,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "forms": forms,
    }
    benchenv.write_results(RESULTS, report, print_json=args.json)


if __name__ == "__main__":
    main()
