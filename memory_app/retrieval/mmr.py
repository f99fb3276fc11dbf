"""Maximal marginal relevance: trade relevance against redundancy with what is already chosen."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"[a-z0-9]+")


def word_set(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def jaccard_similarities(texts: Sequence[str]) -> np.ndarray:
    """Pairwise Jaccard similarity of word sets: the fallback when rows have no embedding."""
    sets = [word_set(text) for text in texts]
    n = len(sets)
    result = np.eye(n, dtype=np.float64)
    for i in range(n):
        for j in range(i + 1, n):
            union = len(sets[i] | sets[j])
            value = len(sets[i] & sets[j]) / union if union else 0.0
            result[i, j] = result[j, i] = value
    return result


def cosine_similarities(embeddings: np.ndarray) -> np.ndarray:
    matrix = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    similarities: np.ndarray = unit @ unit.T
    return similarities


def mmr_order(
    relevance: np.ndarray,
    similarities: np.ndarray,
    *,
    lambda_: float = 0.7,
    k: int | None = None,
) -> list[int]:
    """Greedy MMR: pick argmax of lambda * rel - (1 - lambda) * max similarity to the picked.

    Relevance is divided by its maximum (shifted to be non-negative first) so lambda means the
    same whatever the score scale; min-max would give the last candidate zero relevance and make
    any diverse item beat it.
    Returns indices into the input, best first, at most k of them.
    """
    n = len(relevance)
    k = n if k is None else min(k, n)
    if n == 0 or k <= 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    rel = rel - min(0.0, float(rel.min()))
    top = float(rel.max())
    rel = rel / top if top > 0 else np.ones_like(rel)
    chosen: list[int] = []
    redundancy = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    for _ in range(k):
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        score = lambda_ * rel - (1.0 - lambda_) * penalty
        score[~available] = -np.inf
        pick = int(np.argmax(score))
        chosen.append(pick)
        available[pick] = False
        redundancy = np.maximum(redundancy, similarities[pick])
    return chosen
