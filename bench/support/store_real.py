"""Real sentences for bench/store.py: stored beside the synthetic rows, and a stream of new ones.

The synthetic rows' pseudo-word texts carry no meaning the offline judge can read, while their
vectors put half the new items within the candidate radius of several rows, so in that workload
nearly every store ends as a merge of several memories: the write path's worst case. This module
adds what a deployment sees: real sentences with their real MiniLM vectors, whose neighbours are
the sentences they relate to (a MiniLM vector and a synthetic one are ~0.95 apart, beyond the
radius).

Stored with the table: the `existing` side of every pair in ../shared/data/memory_pairs_dev.jsonl
and the first STORED_TURNS distinct LoCoMo turns. New items: the pairs' `new` side (duplicates,
updates, refinements, distinct facts: the hard cases) and the next LoCoMo turns (what a
conversation adds). Without ../shared/data the real workload is skipped with a message.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
PAIRS = DATA / "memory_pairs_dev.jsonl"
LOCOMO = DATA / "locomo10.json"
STORED_TURNS = 2000


def available() -> bool:
    return PAIRS.exists() and LOCOMO.exists()


def _turns() -> list[str]:
    seen: set[str] = set()
    out = []
    for conversation in json.loads(LOCOMO.read_text()):
        convo = conversation["conversation"]
        for key, session in convo.items():
            if not key.startswith("session_") or not isinstance(session, list):
                continue
            for turn in session:
                text = f"{turn['speaker']}: {turn['text']}".strip()
                folded = " ".join(text.casefold().split())
                if len(text.split()) >= 5 and folded not in seen:
                    seen.add(folded)
                    out.append(text)
    return out


def texts() -> tuple[list[str], list[str]]:
    """(stored, incoming): distinct texts, incoming interleaving hard pairs and conversation turns."""
    pairs = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    turns = _turns()
    from memory_app.text import normalized_hash

    # One active row per normalised text and scope (memory_active_text_unique).
    by_hash = {normalized_hash(t): t for t in reversed([p["existing"] for p in pairs] + turns[:STORED_TURNS])}
    stored = list(reversed(by_hash.values()))
    fresh = turns[STORED_TURNS:]
    incoming: list[str] = []
    for i, pair in enumerate(pairs):
        incoming += [pair["new"], fresh[i]]
    return stored, incoming


def embed(texts: list[str]) -> np.ndarray:
    from memory_app.embeddings.local import local_embed

    return np.asarray(local_embed(texts), dtype=np.float32)
