"""An exact upper bound on the fitted model's duplicate probability, before the token model runs.

The model is logistic over standardised features, so its score is linear in each feature: over a box
of feature values its largest score sits at one corner, chosen per feature by the sign of the
weight. Features that need the word alignment are only known to lie in a range (from the words'
spelling: a shared stem is a sure match, a name the other side lacks a sure miss); the others are
known exactly. When even the largest score stays below the bar the caller acts from, the alignment
cannot change the verdict and is never computed. Nothing here knows which features a calibration
uses: any feature without a known range gets an unbounded one, which simply disables the gate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# The bound is compared with a threshold the exact probability is compared with; this much score
# headroom keeps float rounding (the alignment runs in float32) from ever deciding a pair the gate
# skipped.
SCORE_MARGIN = 1e-6


@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float

    @staticmethod
    def exact(value: float) -> Interval:
        return Interval(value, value)


UNBOUNDED = Interval(-math.inf, math.inf)


def score_upper_bound(
    lo: np.ndarray,
    hi: np.ndarray,
    *,
    mean: Sequence[float],
    scale: Sequence[float],
    coef: Sequence[float],
    intercept: float,
) -> float:
    """The largest logistic score `intercept + coef . (x - mean) / scale` over lo <= x <= hi."""
    weight = np.asarray(coef, dtype=np.float64) / np.asarray(scale, dtype=np.float64)
    centre = np.asarray(mean, dtype=np.float64)
    # A zero weight contributes nothing, even on an unbounded feature (not inf * 0 = nan).
    used = weight != 0.0
    weight, centre = weight[used], centre[used]
    lo_term = weight * (np.asarray(lo, dtype=np.float64)[used] - centre)
    hi_term = weight * (np.asarray(hi, dtype=np.float64)[used] - centre)
    return float(intercept + np.maximum(lo_term, hi_term).sum())


def probability_upper_bound(score_bound: float) -> float:
    if score_bound == math.inf:
        return 1.0
    return 1.0 / (1.0 + math.exp(-(score_bound + SCORE_MARGIN)))


@dataclass(frozen=True)
class CoverageBounds:
    """Per content word of one side, what its best counterpart's similarity can be (coverage())."""

    lo: np.ndarray
    hi: np.ndarray


def coverage_bounds(
    stems: Sequence[str], names: Sequence[bool], other_stems: Sequence[str]
) -> CoverageBounds:
    """The range of alignment.coverage() for each word, from spelling alone: a stem the other side
    has counts 1, a name it lacks counts UNMATCHED, any other word lies in [UNMATCHED, 1]."""
    from memory_app.judge.signals.alignment import UNMATCHED

    if not stems:
        return CoverageBounds(np.ones(1), np.ones(1))
    if not other_stems:
        missing = np.full(len(stems), UNMATCHED)
        return CoverageBounds(missing, missing.copy())
    other = set(other_stems)
    lo = np.full(len(stems), UNMATCHED)
    hi = np.ones(len(stems))
    for i, (stem, is_name) in enumerate(zip(stems, names, strict=True)):
        if stem in other:
            lo[i] = 1.0
        elif is_name:
            hi[i] = UNMATCHED
    return CoverageBounds(lo, hi)


def restated(bounds: CoverageBounds, indices: frozenset[int]) -> CoverageBounds:
    """`bounds` once the words at `indices` count as exact counterparts (1.0), as
    features.lexical_alignment sets them; an index past the words is ignored there too."""
    inside = [i for i in indices if i < len(bounds.lo)]
    lo, hi = bounds.lo.copy(), bounds.hi.copy()
    lo[inside] = hi[inside] = 1.0
    return CoverageBounds(lo, hi)


@dataclass(frozen=True)
class AlignmentBounds:
    """Ranges of the fields of alignment.Alignment, each taken on its own (a box, so a bound)."""

    cover_old: Interval
    cover_new: Interval
    worst: Interval
    unmatched: Interval


def alignment_bounds(old: CoverageBounds, new: CoverageBounds) -> AlignmentBounds:
    """Mirrors alignment.align(): means, the minimum, and the count below MATCHED, as ranges."""
    from memory_app.judge.signals.alignment import MATCHED

    sure_misses = int((old.hi < MATCHED).sum() + (new.hi < MATCHED).sum())
    possible_misses = int((old.lo < MATCHED).sum() + (new.lo < MATCHED).sum())
    return AlignmentBounds(
        cover_old=Interval(float(old.lo.mean()), float(old.hi.mean())),
        cover_new=Interval(float(new.lo.mean()), float(new.hi.mean())),
        worst=Interval(
            float(min(old.lo.min(), new.lo.min())),
            float(min(old.hi.min(), new.hi.min())),
        ),
        unmatched=Interval(sure_misses, possible_misses),
    )
