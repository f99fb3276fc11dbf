"""Synthetic memories for bench/compaction.py: realistic scope sizes, planted duplicate groups.

Geometry (cosine distance d = 1 - cos; the compaction radius r is 0.45 by default):
- every scope has topics; a fact is its topic direction plus noise, so unrelated facts of one topic
  sit at d ~ 0.8 (sd 0.05: never inside r by chance; distinct facts inside the radius, like
  "espresso grinder" / "espresso machine", are the judge's job and measured by its evaluation)
  and facts of different topics at d ~ 1;
- a planted group is a fact plus 1-3 paraphrases at d 0.02-0.12 from it (pairwise < 0.25);
- chain bait: for some planted facts a second fact B is placed at an angle of ~95 degrees along a
  direction u, with one paraphrase of each pointing towards the other. Then A~a' and B~b' are
  close and a'~b' is inside r (d ~ 0.27), while A~b', a'~B and A~B are not: a union of pairs
  chains the two facts into one group, a cohesive grouping must not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DIM = 384


@dataclass
class ScopeData:
    name: str
    vectors: np.ndarray  # float32, n x DIM, unit rows
    fact: np.ndarray  # int64 fact id per row (truth)
    planted: dict[int, tuple[int, ...]]  # fact id -> row indexes of its planted group
    bait_pairs: int


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _orthogonal(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    u = rng.standard_normal(x.shape[-1]).astype(np.float32)
    u -= (u @ x) * x
    return u / np.linalg.norm(u)


def _rotate(x: np.ndarray, u: np.ndarray, distance: float) -> np.ndarray:
    """The unit vector at cosine distance `distance` from x, towards u (u orthogonal to x)."""
    cos = 1.0 - distance
    return _unit(cos * x + np.sqrt(max(0.0, 1 - cos * cos)) * u)


def scope_data(
    rng: np.random.Generator,
    *,
    name: str,
    rows: int,
    first_fact: int,
    planted_share: float = 0.05,
    bait_share: float = 0.2,
) -> ScopeData:
    """`rows` memories: about `planted_share` of the facts carry 1-3 paraphrases; `bait_share` of the
    planted facts get a chain-bait partner."""
    topics = _unit(rng.standard_normal((max(4, rows // 60), DIM)))
    vectors: list[np.ndarray] = []
    fact: list[int] = []
    planted: dict[int, list[int]] = {}
    next_fact = first_fact
    bait = 0

    def add(v: np.ndarray, f: int) -> int:
        vectors.append(v)
        fact.append(f)
        return len(vectors) - 1

    def new_fact() -> np.ndarray:
        t = topics[rng.integers(len(topics))]
        return _unit(0.5 * t + _unit(rng.standard_normal(DIM)))

    while len(vectors) < rows:
        center = new_fact()
        f = next_fact
        next_fact += 1
        if rng.random() >= planted_share or rows - len(vectors) < 8:
            add(center, f)
            continue
        group = [add(center, f)]
        toward = None
        if rng.random() < bait_share:
            # Partner B 95 degrees away in the plane (A, u); a' leans towards B, b' towards A.
            toward = _orthogonal(rng, center)
            angle = np.deg2rad(95.0)
            partner = _unit(np.cos(angle) * center + np.sin(angle) * toward)
            g = next_fact
            next_fact += 1
            back = _orthogonal_towards(partner, center)
            planted[g] = [add(partner, g), add(_rotate(partner, back, 0.1), g)]
            bait += 1
        for k in range(int(rng.integers(1, 4))):
            leaning = toward is not None and k == 0
            direction = toward if leaning else _orthogonal(rng, center)
            distance = 0.1 if leaning else float(rng.uniform(0.02, 0.12))
            group.append(add(_rotate(center, direction, distance), f))
        planted[f] = group
    return ScopeData(
        name=name,
        vectors=np.stack(vectors),
        fact=np.asarray(fact, dtype=np.int64),
        planted={f: tuple(g) for f, g in planted.items()},
        bait_pairs=bait,
    )


def _orthogonal_towards(x: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The unit direction orthogonal to x that points towards target."""
    u = target - (target @ x) * x
    return u / np.linalg.norm(u)


def scope_plan(total: int, rng: np.random.Generator) -> list[tuple[str, int]]:
    """Scope names and sizes. 1 M: one shared namespace of 100 k, four users of 20-30 k, the rest
    users of about 1,000 (500-1,500). Smaller totals: a namespace and one large user of 20 % each."""
    if total >= 500_000:
        plan = [("namespace:knowledge", total // 10)]
        plan += [(f"user:large-{i}", int(total * rng.uniform(0.02, 0.03))) for i in range(4)]
    else:
        plan = [("namespace:knowledge", total // 5), ("user:large-0", total // 5)]
    left = total - sum(n for _, n in plan)
    i = 0
    while left > 0:
        n = min(left, int(rng.integers(500, 1501)))
        if left - n < 500:
            n = left
        plan.append((f"user:{i}", n))
        left -= n
        i += 1
    return plan
