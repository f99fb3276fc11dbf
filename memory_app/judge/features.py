"""Pair features for the offline relation judge: pure functions of two texts and their distance."""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from memory_app.judge import gate, reach
from memory_app.judge import text_norm as tn
from memory_app.judge.alignment import Alignment, spelled, text_alignment

# The features a fit uses, in this order; the calibration JSON names them and stores one weight
# per name, so a calibration may use any subset of FEATURES below.
FEATURE_NAMES: tuple[str, ...] = ("cover_min", "unmatched_words")


class AlignmentDeferred(Exception):
    """Raised instead of running the token model while alignment is deferred (`alignment_deferred`)."""


_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar("alignment_deferred", default=False)


@contextmanager
def alignment_deferred() -> Iterator[None]:
    """Within this block reading a pair's alignment raises AlignmentDeferred unless it is known
    already: how the gate finds which features need it, and the judge which texts to batch."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


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
    unit_conflict: bool
    time_shift: bool
    identifiers_differ: bool
    order_changed: bool
    frame_share: float = 0.0
    middle_old: tuple[str, ...] = ()
    middle_new: tuple[str, ...] = ()
    foreign_names: bool = False
    symbols_differ: bool = False
    old_text: str = ""
    new_text: str = ""

    @cached_property
    def alignment(self) -> Alignment:
        """Word-level coverage both ways (runs the token model once per text, so only on demand)."""
        if _DEFERRED.get():
            raise AlignmentDeferred
        return text_alignment(self.old_text, self.new_text)

    @cached_property
    def alignment_bounds(self) -> gate.AlignmentBounds:
        """What the alignment can be, from the words' spelling alone (no token model)."""
        old_stems, old_names = spelled(self.old_text)
        new_stems, new_names = spelled(self.new_text)
        return gate.alignment_bounds(
            gate.coverage_bounds(old_stems, old_names, new_stems),
            gate.coverage_bounds(new_stems, new_names, old_stems),
        )

    @property
    def number_conflict(self) -> bool:
        """Both sides state numbers and they differ: a changed value, or a unit the rules cannot convert."""
        return bool(self.numbers_new) and bool(self.numbers_old) and self.numbers_new != self.numbers_old

    @property
    def numbers_differ(self) -> bool:
        """Any number stated on one side only: a merge must neither lose nor invent a number."""
        return self.numbers_new != self.numbers_old

    @property
    def calendar_swap(self) -> bool:
        """A month or weekday exchanged for another: a changed date, like a changed number."""
        calendar = tn.MONTHS | tn.WEEKDAYS
        return bool(self.only_old & calendar) and bool(self.only_new & calendar)

    @property
    def single_swap(self) -> bool:
        """Exactly one content word exchanged in an otherwise identical frame, and not two forms of
        one word (allergic/allergy): another object, place or activity unless a human says otherwise."""
        if len(self.only_old) != 1 or len(self.only_new) != 1 or not self.shared:
            return False
        (old_word,), (new_word,) = tuple(self.only_old), tuple(self.only_new)
        return not tn.same_root(old_word, new_word)

    @property
    def frame_swap(self) -> bool:
        """Half or more of the shorter text is a common frame and a phrase inside it is exchanged for
        an unrelated one: "allergic to [peanuts | tree nuts]", "scared of [thunderstorms | the
        vacuum]". single_swap is the one-word case; a paraphrase rewrites the frame as well."""
        if self.frame_share < 0.5 or not self.middle_old or not self.middle_new:
            return False
        return not any(tn.same_root(a, b) for a in self.middle_old for b in self.middle_new)

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

    def vector(self, default_distance: float, names: Sequence[str] = FEATURE_NAMES) -> np.ndarray:
        distance = default_distance if self.distance is None else self.distance
        return np.array([FEATURES[name](self, distance) for name in names], dtype=np.float64)

    def intervals(self, default_distance: float, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per feature, the range its value can take without running the token model: exact for
        the features that do not read the alignment (or when it is known already), a range from
        ALIGNMENT_BOUNDS for those that do, unbounded for one that reads it and has no entry there."""
        distance = default_distance if self.distance is None else self.distance
        lo, hi = np.empty(len(names)), np.empty(len(names))
        for i, name in enumerate(names):
            try:
                with alignment_deferred():
                    interval = gate.Interval.exact(FEATURES[name](self, distance))
            except AlignmentDeferred:
                bound = ALIGNMENT_BOUNDS.get(name)
                interval = bound(self.alignment_bounds) if bound else gate.UNBOUNDED
            lo[i], hi[i] = interval.lo, interval.hi
        return lo, hi


FEATURES: dict[str, Callable[[PairFacts, float], float]] = {
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
}

# For each feature that reads the alignment: its range given the ranges of the alignment's fields.
# Each is monotone in the fields it reads, so the ends of the ranges give the ends of its range.
ALIGNMENT_BOUNDS: dict[str, Callable[[gate.AlignmentBounds], gate.Interval]] = {
    "cover_min": lambda b: gate.Interval(
        min(b.cover_old.lo, b.cover_new.lo), min(b.cover_old.hi, b.cover_new.hi)
    ),
    "cover_max": lambda b: gate.Interval(
        max(b.cover_old.lo, b.cover_new.lo), max(b.cover_old.hi, b.cover_new.hi)
    ),
    "worst": lambda b: b.worst,
    "unmatched": lambda b: gate.Interval(math.log1p(b.unmatched.lo), math.log1p(b.unmatched.hi)),
    "unmatched_words": lambda b: b.unmatched,
}


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
    """One side is negated relative to the other: a negator on one side only XOR an antonym pair."""
    # Presence, not parity: "ruled out the supposed allergy" carries two cues and still negates.
    negation_differs = (tn.negation_count(old) > 0) != (tn.negation_count(new) > 0)
    old_words, new_words = tn.content_words(old), tn.content_words(new)
    antonym = any(tn.ANTONYMS.get(word, frozenset()) & new_words for word in old_words - new_words)
    antonym = antonym or tn.morphological_negation(old_words - new_words, new_words - old_words)
    return negation_differs != antonym


@lru_cache(maxsize=8192)
def pair_facts(old: str, new: str, distance: float | None) -> PairFacts:
    old_words, new_words = tn.content_words(old), tn.content_words(new)
    union = old_words | new_words
    shared = old_words & new_words
    old_len, new_len = max(len(tn.raw_tokens(old)), 1), max(len(tn.raw_tokens(new)), 1)
    old_poss, new_poss = tn.possessors(old), tn.possessors(new)
    old_names, new_names = tn.capitalised_names(old), tn.capitalised_names(new)
    frame = tn.frame_split(old, new)
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
        unit_conflict=_unit_conflict(old_words, new_words),
        time_shift=bool((old_words ^ new_words) & tn.TIME_MARKERS),
        identifiers_differ=_identifiers_differ(old, new),
        # "prefers tabs over spaces" / "prefers spaces over tabs": same words, roles exchanged.
        order_changed=(old_words == new_words and tn.content_sequence(old) != tn.content_sequence(new))
        or _names_reordered(old, new),
        frame_share=frame[0],
        middle_old=frame[1],
        middle_new=frame[2],
        foreign_names=tn.foreign_names(old, new),
        symbols_differ=reach.symbols(old) != reach.symbols(new),
        old_text=old,
        new_text=new,
    )


def _names_reordered(old: str, new: str) -> bool:
    """The same named entities in another order ("moved from Osaka to Kyoto" / "from Kyoto to Osaka")."""
    old_names, new_names = tn.name_sequence(old), tn.name_sequence(new)
    shared = set(old_names) & set(new_names)
    if len(shared) < 2:
        return False
    return [n for n in old_names if n in shared] != [n for n in new_names if n in shared]


def _identifiers_differ(old: str, new: str) -> bool:
    """Both name code identifiers (get_weather, days=7) and not the same ones: another tool or call."""
    old_ids, new_ids = tn.identifiers(old), tn.identifiers(new)
    return bool(old_ids) and bool(new_ids) and old_ids != new_ids


def _unit_conflict(old_words: frozenset[str], new_words: frozenset[str]) -> bool:
    old_units, new_units = old_words & tn.UNITS, new_words & tn.UNITS
    return bool(old_units) and bool(new_units) and not (old_units & new_units)


def _person_restated(old: str, new: str) -> bool:
    """Both sides name the same set of people once plural/synonym forms are folded (kids ~ children)."""
    fold = {"kid": "child", "children": "child", "mom": "parent", "father": "parent", "parent": "parent"}
    old_people = {fold.get(w, w) for w in tn.content_words(old) & tn.PERSON_NOUNS}
    new_people = {fold.get(w, w) for w in tn.content_words(new) & tn.PERSON_NOUNS}
    return old_people == new_people
