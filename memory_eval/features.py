"""The candidate features a fit may study beside the runtime judge's (judge/signals/features.py).

The shipped calibration names one feature (`unmatched_lexical`); these are the others tried while
fitting it, kept for `calibrate_dedup` experiments: `CANDIDATE_FEATURES` is the runtime set extended
with them, and a Calibration built with it can be simulated on pairs. A calibration that names one
of these cannot be written or loaded until the feature moves into the runtime set.
"""

from __future__ import annotations

import math

from memory_app.judge.signals import gate
from memory_app.judge.signals.features import RUNTIME_FEATURES, Bound, Feature, FeatureSet

# The features the committed fit uses, in this order; the calibration JSON names them and stores
# one weight per name.
FEATURE_NAMES: tuple[str, ...] = ("unmatched_lexical",)

_VALUES: dict[str, Feature] = {
    "distance": lambda f, d: d,
    "jaccard": lambda f, d: f.jaccard,
    "only_new": lambda f, d: math.log1p(len(f.only_new)),
    "only_old": lambda f, d: math.log1p(len(f.only_old)),
    "number_conflict": lambda f, d: float(f.number_conflict),
    "polarity_flip": lambda f, d: float(f.polarity_flip),
    "possessor_change": lambda f, d: float(f.possessor_change),
    "slot_swap": lambda f, d: float(f.slot_swap),
    "length_ratio": lambda f, d: f.length_ratio,
    "person_change": lambda f, d: float(f.person_change),
    "name_swap": lambda f, d: float(f.name_swap),
    "change_marker": lambda f, d: float(f.change_marker),
    # Same words yet far apart: the few words that differ carry the meaning.
    "overlap_distance": lambda f, d: f.jaccard * d,
    "cover_min": lambda f, d: f.alignment.cover_min,
    "cover_max": lambda f, d: max(f.alignment.cover_old, f.alignment.cover_new),
    "worst": lambda f, d: f.alignment.worst,
    "unmatched": lambda f, d: math.log1p(f.alignment.unmatched),
    # Linear: each further word without a counterpart is as much evidence of another fact as the first.
    "unmatched_words": lambda f, d: float(f.alignment.unmatched),
    "cover_min_lexical": lambda f, d: f.restatement.cover_min,
}

# The features that read a word alignment, and which one (a PairFacts property that runs the token
# model unless known already); every other feature reads the words' spelling alone.
_READS: dict[str, str] = {
    "cover_min": "alignment",
    "cover_max": "alignment",
    "worst": "alignment",
    "unmatched": "alignment",
    "unmatched_words": "alignment",
    "cover_min_lexical": "restatement",
}

# For each feature that reads the alignment: its range given the ranges of the alignment's fields
# (PairFacts.alignment_bounds, restatement_bounds for the lexical features). Each is monotone in
# the fields it reads, so the ends of the ranges give the ends of its range.
_BOUNDS: dict[str, Bound] = {
    "cover_min": lambda f: gate.Interval(
        min(f.alignment_bounds.cover_old.lo, f.alignment_bounds.cover_new.lo),
        min(f.alignment_bounds.cover_old.hi, f.alignment_bounds.cover_new.hi),
    ),
    "cover_max": lambda f: gate.Interval(
        max(f.alignment_bounds.cover_old.lo, f.alignment_bounds.cover_new.lo),
        max(f.alignment_bounds.cover_old.hi, f.alignment_bounds.cover_new.hi),
    ),
    "worst": lambda f: f.alignment_bounds.worst,
    "unmatched": lambda f: gate.Interval(
        math.log1p(f.alignment_bounds.unmatched.lo), math.log1p(f.alignment_bounds.unmatched.hi)
    ),
    "unmatched_words": lambda f: f.alignment_bounds.unmatched,
    "cover_min_lexical": lambda f: gate.Interval(
        min(f.restatement_bounds.cover_old.lo, f.restatement_bounds.cover_new.lo),
        min(f.restatement_bounds.cover_old.hi, f.restatement_bounds.cover_new.hi),
    ),
}


CANDIDATE_FEATURES = RUNTIME_FEATURES.extended(FeatureSet(_VALUES, _READS, _BOUNDS))
