"""Which memories a per-user cap keeps (pure): a retention score from recency and usefulness."""

from __future__ import annotations

import numpy as np


def retention_scores(
    age_days: np.ndarray,
    access_count: np.ndarray,
    helpful_count: np.ndarray,
    harmful_count: np.ndarray,
    *,
    half_life_days: float,
) -> np.ndarray:
    """recency x reuse x usefulness.

    recency halves every `half_life_days` since last use; reuse grows with the log of accesses;
    usefulness is the Laplace-smoothed share of helpful votes (0.5 with no votes), so one harmful
    vote pushes a memory below an unrated one of the same age.
    """
    age = np.maximum(np.asarray(age_days, dtype=np.float64), 0.0)
    recency = np.power(0.5, age / half_life_days)
    reuse = 1.0 + np.log1p(np.maximum(np.asarray(access_count, dtype=np.float64), 0.0))
    helpful = np.asarray(helpful_count, dtype=np.float64)
    harmful = np.asarray(harmful_count, dtype=np.float64)
    usefulness = (helpful + 1.0) / (helpful + harmful + 2.0)
    return recency * reuse * usefulness


def beyond_top_n(scores: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    """The ids not among the `n` best scores (ties broken by newer id first)."""
    if len(ids) <= n:
        return np.asarray([], dtype=np.int64)
    order = np.lexsort((-np.asarray(ids), -np.asarray(scores)))
    return np.asarray(ids)[order[n:]]
