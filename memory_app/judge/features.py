"""Pair features for the offline relation judge: pure functions of two texts and their distance."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from memory_app.judge import text_norm as tn

# The model sees these, in this order; the calibration JSON stores one weight per name.
FEATURE_NAMES: tuple[str, ...] = (
    "distance",
    "jaccard",
    "only_new",
    "only_old",
    "number_conflict",
    "polarity_flip",
    "possessor_change",
    "slot_swap",
    "length_ratio",
    "person_change",
    "name_swap",
    "change_marker",
)


@dataclass(frozen=True)
class PairFacts:
    """What the rules and the model read about one (existing, new) pair."""

    distance: float | None
    jaccard: float
    only_new: frozenset[str]
    only_old: frozenset[str]
    shared: frozenset[str]
    numbers_new: frozenset[float]
    numbers_old: frozenset[float]
    polarity_flip: bool
    possessor_change: bool
    length_ratio: float
    person_change: bool
    name_swap: bool
    change_marker: bool

    @property
    def number_conflict(self) -> bool:
        """Both sides state numbers and they differ: a changed value, or a unit the rules cannot convert."""
        return bool(self.numbers_new) and bool(self.numbers_old) and self.numbers_new != self.numbers_old

    @property
    def slot_swap(self) -> bool:
        """Same sentence frame with one or two words exchanged: the signature of an update or a near miss."""
        return (
            0 < len(self.only_new) <= 2
            and 0 < len(self.only_old) <= 2
            and len(self.shared) >= max(2, len(self.only_new) + len(self.only_old))
        )

    @property
    def new_contains_old(self) -> bool:
        """Every content word and number of the existing text reappears in the new one, which adds more."""
        return (
            not self.only_old
            and len(self.only_new) >= 1
            and self.numbers_old <= self.numbers_new
            and not self.polarity_flip
        )

    def vector(self, default_distance: float) -> np.ndarray:
        distance = default_distance if self.distance is None else self.distance
        return np.array(
            [
                distance,
                self.jaccard,
                math.log1p(len(self.only_new)),
                math.log1p(len(self.only_old)),
                float(self.number_conflict),
                float(self.polarity_flip),
                float(self.possessor_change),
                float(self.slot_swap),
                self.length_ratio,
                float(self.person_change),
                float(self.name_swap),
                float(self.change_marker),
            ],
            dtype=np.float64,
        )


def cosine_distance(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    """1 - cosine similarity; None when either vector is missing (the judge then treats it as unknown)."""
    if a is None or b is None:
        return None
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    if norm == 0.0:
        return None
    return float(1.0 - float(a @ b) / norm)


def polarity_flip(old: str, new: str) -> bool:
    """One side is negated relative to the other: negator parity differs XOR an antonym pair appears."""
    negation_differs = (tn.negation_count(old) % 2) != (tn.negation_count(new) % 2)
    old_words, new_words = tn.content_words(old), tn.content_words(new)
    antonym = any(tn.ANTONYMS.get(word, frozenset()) & new_words for word in old_words - new_words)
    return negation_differs != antonym


def pair_facts(old: str, new: str, distance: float | None) -> PairFacts:
    old_words, new_words = tn.content_words(old), tn.content_words(new)
    union = old_words | new_words
    shared = old_words & new_words
    old_len, new_len = max(len(tn.raw_tokens(old)), 1), max(len(tn.raw_tokens(new)), 1)
    old_poss, new_poss = tn.possessors(old), tn.possessors(new)
    old_names, new_names = tn.capitalised_names(old), tn.capitalised_names(new)
    return PairFacts(
        distance=distance,
        jaccard=len(shared) / len(union) if union else 1.0,
        only_new=new_words - old_words,
        only_old=old_words - new_words,
        shared=shared,
        numbers_new=tn.numbers(new),
        numbers_old=tn.numbers(old),
        polarity_flip=polarity_flip(old, new),
        possessor_change=bool(old_poss ^ new_poss) and bool((old_poss ^ new_poss) & (old_words ^ new_words)),
        length_ratio=min(old_len, new_len) / max(old_len, new_len),
        person_change=bool((old_words ^ new_words) & tn.PERSON_NOUNS) and not _person_restated(old, new),
        name_swap=bool(old_names - new_names) and bool(new_names - old_names),
        change_marker=bool((new_words - old_words) & tn.CHANGE_MARKERS),
    )


def _person_restated(old: str, new: str) -> bool:
    """Both sides name the same set of people once plural/synonym forms are folded (kids ~ children)."""
    fold = {"kid": "child", "children": "child", "mom": "parent", "father": "parent", "parent": "parent"}
    old_people = {fold.get(w, w) for w in tn.content_words(old) & tn.PERSON_NOUNS}
    new_people = {fold.get(w, w) for w in tn.content_words(new) & tn.PERSON_NOUNS}
    return old_people == new_people
