"""Candidate finding and cohesive grouping on plain arrays (no database)."""

from __future__ import annotations

import numpy as np

from memory_app.compaction.candidates import find_pairs, normalize_rows
from memory_app.compaction.grouping import cohesive_groups


def _near(center: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    v = center + noise * rng.standard_normal(center.shape[0]).astype(np.float32) / np.sqrt(center.shape[0])
    return v / np.linalg.norm(v)


def _brute_pairs(x: np.ndarray, radius: float) -> set[tuple[int, int]]:
    s = normalize_rows(x) @ normalize_rows(x).T
    i, j = np.nonzero(np.triu(s >= 1 - radius, 1))
    return set(zip(i.tolist(), j.tolist(), strict=True))


def test_exact_blocks_find_every_pair_a_full_product_finds() -> None:
    rng = np.random.default_rng(1)
    centers = normalize_rows(rng.standard_normal((40, 64)).astype(np.float32))
    x = np.stack([_near(centers[i % 40], rng, 0.3) for i in range(300)])
    found = find_pairs(x, radius=0.2, tile_elements=64 * 64)  # many small tiles
    assert found.method == "exact"
    assert found.examined == 300 * 299 // 2
    assert set(zip(found.left.tolist(), found.right.tolist(), strict=True)) == _brute_pairs(x, 0.2)
    assert np.all(found.left < found.right)
    assert np.all(found.distance <= 0.2 + 1e-6)


def test_inverted_lists_recover_near_duplicates_at_a_fraction_of_the_pairs() -> None:
    rng = np.random.default_rng(2)
    centers = normalize_rows(rng.standard_normal((1500, 64)).astype(np.float32))
    x = np.stack([_near(centers[i % 1500], rng, 0.25) for i in range(4500)])
    truth = _brute_pairs(x, 0.1)
    found = find_pairs(x, radius=0.1, exact_max_rows=1000, list_size=64)
    got = set(zip(found.left.tolist(), found.right.tolist(), strict=True))
    assert found.method == "ivf"
    assert got <= truth
    assert len(got) >= 0.95 * len(truth)
    assert found.examined < 0.2 * (4500 * 4499 // 2)


def test_zero_vectors_never_pair() -> None:
    x = np.zeros((3, 8), dtype=np.float32)
    assert len(find_pairs(x, radius=0.5)) == 0


def test_groups_do_not_chain_through_a_middle_member() -> None:
    # 0~1 and 1~2 are close, 0 and 2 are not: a union would make one group of three.
    left, right, dist = np.array([0, 1]), np.array([1, 2]), np.array([0.05, 0.06], dtype=np.float32)
    groups = cohesive_groups(left, right, dist)
    assert [g.members for g in groups] == [(0, 1)]


def test_groups_grow_when_every_member_is_close_to_every_other() -> None:
    left = np.array([0, 0, 1, 3])
    right = np.array([1, 2, 2, 4])
    dist = np.array([0.01, 0.03, 0.02, 0.05], dtype=np.float32)
    groups = cohesive_groups(left, right, dist)
    assert [(g.members, round(g.max_distance, 2)) for g in groups] == [((0, 1, 2), 0.03), ((3, 4), 0.05)]


def test_kept_apart_pairs_never_share_a_group() -> None:
    left, right = np.array([0, 0, 1]), np.array([1, 2, 2])
    dist = np.array([0.01, 0.02, 0.03], dtype=np.float32)
    groups = cohesive_groups(left, right, dist, cannot_link=[(2, 0)])
    assert [g.members for g in groups] == [(0, 1)]


def test_group_size_is_capped() -> None:
    idx = [(a, b) for a in range(6) for b in range(a + 1, 6)]
    left, right = np.array([a for a, _ in idx]), np.array([b for _, b in idx])
    groups = cohesive_groups(left, right, np.full(len(idx), 0.01, np.float32), max_group_size=4)
    assert max(len(g.members) for g in groups) == 4
