"""Fusing several ranked lists (vector, full text) into one score per item."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

import numpy as np

# The ranked items: memory ids in the service, any hashable key in the tests.
K = TypeVar("K", bound=Hashable)


def rrf_scores(
    rankings: Sequence[Sequence[K]],
    *,
    k: float = 60.0,
    weights: Sequence[float] | None = None,
) -> dict[K, float]:
    """Reciprocal rank fusion: sum over lists of weight / (k + rank), rank starting at 1.

    Ranks, not raw scores, are fused because cosine distance and ts_rank live on unrelated scales.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    fused: dict[K, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


def minmax(values: np.ndarray) -> np.ndarray:
    """Scale to [0, 1]; a constant array maps to ones (every item equally good)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-12:
        return np.ones_like(values)
    return (values - low) / (high - low)


def ranked(scores: Mapping[K, float]) -> list[K]:
    """Keys by descending score; ties keep insertion order (stable)."""
    return sorted(scores, key=lambda key: -scores[key])


def cosine_to(query: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of `vectors` to `query`, in float32 as pgvector computes it;
    0 where either is a zero vector (pgvector's `<=>` gives NaN there, which no ranking can use)."""
    rows = np.asarray(vectors, dtype=np.float32)
    q = np.asarray(query, dtype=np.float32).ravel()
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows)) * np.float32(np.sqrt(q @ q))
    dots = rows @ q
    out: np.ndarray = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    clipped: np.ndarray = np.clip(out, -1.0, 1.0)
    return clipped
