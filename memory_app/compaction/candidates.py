"""Every pair of vectors within a cosine-distance radius, by blocked matrix products.

Measured on this stack (docs/PERFORMANCE.md, bench/compaction.py): reading a scope's vectors out and
multiplying blocks in numpy finds every pair far faster than per-row k-NN queries in SQL. Up to
`exact_max_rows` rows every pair is computed (exact). Above that the quadratic cost dominates (a
100 k scope is 5e9 pairs), so the rows are partitioned by spherical k-means into lists of a few
hundred rows, every row goes into its nearest lists (up to `probe`, within a similarity margin of
its nearest), and pairs are computed within each list: near duplicates share a list, so recall
stays near 1 at a few percent of the cost.
Memory is bounded by the tile size, never by n x n.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

DEFAULT_TILE_ELEMENTS = 4_000_000  # 16 MB of float32 similarities per product


@dataclass(frozen=True)
class CandidatePairs:
    """Row-index pairs (left < right) with their cosine distance; `examined` pairs were computed."""

    left: np.ndarray
    right: np.ndarray
    distance: np.ndarray
    examined: int
    method: str

    def __len__(self) -> int:
        return int(self.left.shape[0])


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    # Zero vectors stay zero: similarity 0 with everything, so they never pair.
    return x / np.where(norms == 0, 1.0, norms)


def _empty(examined: int, method: str) -> CandidatePairs:
    none = np.empty(0, dtype=np.int64)
    return CandidatePairs(none, none.copy(), np.empty(0, dtype=np.float32), examined, method)


def _pairs_within(x: np.ndarray, threshold: float, tile_elements: int) -> tuple[np.ndarray, ...]:
    """All (i < j) with x_i . x_j >= threshold, computed tile by tile over the upper triangle."""
    n = x.shape[0]
    block = max(64, min(n, int(np.sqrt(tile_elements))))
    lefts: list[np.ndarray] = []
    rights: list[np.ndarray] = []
    sims: list[np.ndarray] = []
    for i0 in range(0, n, block):
        xi = x[i0 : i0 + block]
        for j0 in range(i0, n, block):
            s = xi @ x[j0 : j0 + block].T
            if j0 == i0:
                s[np.tril_indices(s.shape[0], 0, s.shape[1])] = -2.0  # pairs once, never with itself
            li, rj = np.nonzero(s >= threshold)
            if li.size:
                lefts.append(li + i0)
                rights.append(rj + j0)
                sims.append(s[li, rj])
    if not lefts:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32)
    return (
        np.concatenate(lefts).astype(np.int64),
        np.concatenate(rights).astype(np.int64),
        np.concatenate(sims).astype(np.float32),
    )


def _assign(
    x: np.ndarray, centroids: np.ndarray, top: int, tile_elements: int, margin: float | None = None
) -> np.ndarray:
    """Indexes of each row's `top` most similar centroids (n x top). With `margin`, a centroid less
    similar than the row's best minus the margin is replaced by -1 (the row is not put there)."""
    rows = max(1, tile_elements // max(1, centroids.shape[0]))
    out = np.empty((x.shape[0], top), dtype=np.int64)
    for i0 in range(0, x.shape[0], rows):
        s = x[i0 : i0 + rows] @ centroids.T
        if top == 1:
            out[i0 : i0 + rows, 0] = np.argmax(s, axis=1)
            continue
        idx = np.argpartition(-s, top - 1, axis=1)[:, :top]
        if margin is not None:
            sims = np.take_along_axis(s, idx, axis=1)
            idx = np.where(sims >= sims.max(axis=1, keepdims=True) - margin, idx, -1)
        out[i0 : i0 + rows] = idx
    return out


def spherical_kmeans(
    x: np.ndarray, k: int, *, iterations: int = 8, sample: int = 64, seed: int = 0, tile: int = 0
) -> np.ndarray:
    """Unit-norm centroids fitted on a sample of at most `sample` rows per centroid."""
    rng = np.random.default_rng(seed)
    tile = tile or DEFAULT_TILE_ELEMENTS
    fit = x if x.shape[0] <= k * sample else x[rng.choice(x.shape[0], k * sample, replace=False)]
    centroids = fit[rng.choice(fit.shape[0], k, replace=False)].copy()
    for _ in range(iterations):
        labels = _assign(fit, centroids, 1, tile)[:, 0]
        # Per-centroid sums as one product with a one-hot matrix (np.add.at is 10x slower).
        onehot = np.zeros((k, fit.shape[0]), dtype=np.float32)
        onehot[labels, np.arange(fit.shape[0])] = 1.0
        sums = onehot @ fit
        empty = ~sums.any(axis=1)
        sums[empty] = fit[rng.choice(fit.shape[0], int(empty.sum()), replace=False)]
        centroids = normalize_rows(sums)
    return centroids


def find_pairs(
    vectors: np.ndarray,
    *,
    radius: float,
    exact_max_rows: int = 20_000,
    list_size: int = 128,
    probe: int = 6,
    margin: float = 0.12,
    tile_elements: int = DEFAULT_TILE_ELEMENTS,
    seed: int = 0,
    blas_threads: int | None = 1,
) -> CandidatePairs:
    """Pairs of rows whose cosine distance is at most `radius`.

    Exact (every pair computed) up to `exact_max_rows`; above, inverted lists of about `list_size`
    rows; each row goes into its `probe` nearest lists whose centroid is at most `margin` less similar
    than its nearest (rows deep inside a list stay in one, rows near a border go into several).
    `blas_threads` caps BLAS threads (None: the
    library's default): on a busy machine OpenBLAS threads spin against each other and one thread
    per process was measured 2-3x faster than two (docs/PERFORMANCE.md).
    """
    if blas_threads is None:
        return _find_pairs(vectors, radius, exact_max_rows, list_size, probe, margin, tile_elements, seed)

    with threadpool_limits(limits=blas_threads, user_api="blas"):
        return _find_pairs(vectors, radius, exact_max_rows, list_size, probe, margin, tile_elements, seed)


def _find_pairs(
    vectors: np.ndarray,
    radius: float,
    exact_max_rows: int,
    list_size: int,
    probe: int,
    margin: float,
    tile_elements: int,
    seed: int,
) -> CandidatePairs:
    n = int(vectors.shape[0])
    if n < 2:
        return _empty(0, "exact")
    x = normalize_rows(vectors)
    threshold = 1.0 - float(radius)
    if n <= exact_max_rows:
        left, right, sim = _pairs_within(x, threshold, tile_elements)
        return CandidatePairs(left, right, (1.0 - sim).astype(np.float32), n * (n - 1) // 2, "exact")

    k = max(2, n // list_size)
    probe = min(probe, k)
    centroids = spherical_kmeans(x, k, seed=seed, tile=tile_elements)
    lists = _assign(x, centroids, probe, tile_elements, margin)
    flat_rows = np.repeat(np.arange(n, dtype=np.int64), probe)
    flat_lists = lists.reshape(-1)
    placed = flat_lists >= 0
    flat_rows, flat_lists = flat_rows[placed], flat_lists[placed]
    order = np.argsort(flat_lists, kind="stable")
    members_sorted = flat_rows[order]
    bounds = np.searchsorted(flat_lists[order], np.arange(k + 1))
    keys: list[np.ndarray] = []
    sims: list[np.ndarray] = []
    examined = 0
    for c in range(k):
        members = members_sorted[bounds[c] : bounds[c + 1]]
        m = members.shape[0]
        if m < 2:
            continue
        examined += m * (m - 1) // 2
        li, rj, s = _pairs_within(x[members], threshold, tile_elements)
        if li.size:
            a, b = members[li], members[rj]
            keys.append(np.minimum(a, b) * n + np.maximum(a, b))
            sims.append(s)
    if not keys:
        return _empty(examined, "ivf")
    all_keys = np.concatenate(keys)
    unique_keys, first = np.unique(all_keys, return_index=True)  # a pair may share several lists
    sim = np.concatenate(sims)[first]
    return CandidatePairs(unique_keys // n, unique_keys % n, (1.0 - sim).astype(np.float32), examined, "ivf")
