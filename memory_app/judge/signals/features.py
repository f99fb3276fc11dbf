"""Pair features for the offline relation judge: pure functions of two texts and their distance."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from memory_app.judge.signals import gate, quantities, reach, relations
from memory_app.judge.signals import text_norm as tn
from memory_app.judge.signals.alignment import (
    Alignment,
    alignment_of,
    content_spans,
    coverage,
    spelled,
    text_alignment,
    token_encoder,
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
    unit_conflict: bool
    time_shift: bool
    identifiers_differ: bool
    order_changed: bool
    frame_share: float = 0.0
    middle_old: tuple[str, ...] = ()
    middle_new: tuple[str, ...] = ()
    foreign_names: bool = False
    symbols_differ: bool = False
    # Amounts with a unit or currency (judge/signals/quantities.py) that are not the same on both sides.
    amounts_differ: bool = False
    old_text: str = ""
    new_text: str = ""

    @cached_property
    def alignment(self) -> Alignment:
        """Word-level coverage both ways (runs the token model once per text, so only on demand)."""
        return text_alignment(self.old_text, self.new_text)

    @cached_property
    def coverage_bounds(self) -> tuple[gate.CoverageBounds, gate.CoverageBounds]:
        """What each side's word coverage can be, from the words' spelling alone (no token model)."""
        old_stems, old_names = spelled(self.old_text)
        new_stems, new_names = spelled(self.new_text)
        return (
            gate.coverage_bounds(old_stems, old_names, new_stems),
            gate.coverage_bounds(new_stems, new_names, old_stems),
        )

    @cached_property
    def alignment_bounds(self) -> gate.AlignmentBounds:
        """What the alignment can be, from the words' spelling alone (no token model)."""
        return gate.alignment_bounds(*self.coverage_bounds)

    @cached_property
    def restatement_bounds(self) -> gate.AlignmentBounds:
        """What `restatement` can be: the words it counts as restated (lexical_counterparts, read
        from the spelling) are exact there, the others as in alignment_bounds."""
        old_bounds, new_bounds = self.coverage_bounds
        old_own, new_spelled = lexical_counterparts(self.old_text, self.new_text)
        new_own, old_spelled = lexical_counterparts(self.new_text, self.old_text)
        return gate.alignment_bounds(
            gate.restated(old_bounds, old_own | old_spelled),
            gate.restated(new_bounds, new_own | new_spelled),
        )

    @cached_property
    def restatement(self) -> Alignment:
        """The alignment once spelling variants, abbreviations and acronyms count as the same word:
        "alergic"/"allergic", "nvim"/"Neovim", "Feb"/"February", "AWS"/"Amazon Web Services". The
        token vectors of a misspelt or shortened word sit far from the full word's, so the plain
        alignment leaves both unmatched although neither states anything the other lacks."""
        return lexical_alignment(self.old_text, self.new_text)

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
        return not same_word(old_word, new_word)

    @property
    def frame_swap(self) -> bool:
        """Half or more of the shorter text is a common frame and a phrase inside it is exchanged for
        an unrelated one: "allergic to [peanuts | tree nuts]", "scared of [thunderstorms | the
        vacuum]". single_swap is the one-word case; a paraphrase rewrites the frame as well."""
        if self.frame_share < 0.5 or not self.middle_old or not self.middle_new:
            return False
        return not any(same_word(a, b) for a in self.middle_old for b in self.middle_new)

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

    def known(self, name: str) -> bool:
        """Whether the alignment `name` ("alignment" or "restatement") is computed already: reading
        it then runs no token model. pair_facts() is cached, so a pair judged in full keeps it."""
        return name in self.__dict__

    def features_known(self, names: Sequence[str], features: FeatureSet) -> bool:
        """Whether these features can be computed without running the token model."""
        return all(self.known(features.reads[name]) for name in names if name in features.reads)

    def vector(self, default_distance: float, names: Sequence[str], features: FeatureSet) -> np.ndarray:
        distance = default_distance if self.distance is None else self.distance
        return np.array([features.values[name](self, distance) for name in names], dtype=np.float64)

    def intervals(
        self, default_distance: float, names: Sequence[str], features: FeatureSet
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per feature, the range its value can take without running the token model: exact for
        the features that do not read the alignment (or when it is known already), a range from
        the set's bounds for those that do, unbounded for one that reads it and has no entry there."""
        distance = default_distance if self.distance is None else self.distance
        lo, hi = np.empty(len(names)), np.empty(len(names))
        for i, name in enumerate(names):
            if self.features_known([name], features):
                interval = gate.Interval.exact(features.values[name](self, distance))
            else:
                bound = features.bounds.get(name)
                interval = bound(self) if bound else gate.UNBOUNDED
            lo[i], hi[i] = interval.lo, interval.hi
        return lo, hi


Feature = Callable[["PairFacts", float], float]
Bound = Callable[["PairFacts"], gate.Interval]


@dataclass(frozen=True)
class FeatureSet:
    """Features by name; for those that read a word alignment, which one (a PairFacts property that
    runs the token model unless known already) and the feature's range given the ranges of the
    alignment's fields (monotone in what it reads, so the ends of the ranges give the ends of its)."""

    values: Mapping[str, Feature]
    reads: Mapping[str, str]
    bounds: Mapping[str, Bound]

    def extended(self, other: FeatureSet) -> FeatureSet:
        return FeatureSet(
            {**self.values, **other.values}, {**self.reads, **other.reads}, {**self.bounds, **other.bounds}
        )


# What the runtime judge computes: exactly the features the shipped calibrations name (a test
# holds them equal). The candidates a fit may study live with the calibration tooling
# (memory_eval/features.py); a calibration naming one of those is refused until it moves here.
RUNTIME_FEATURES = FeatureSet(
    values={"unmatched_lexical": lambda f, d: float(f.restatement.unmatched)},
    reads={"unmatched_lexical": "restatement"},
    bounds={
        # Lexical counterparts (misspellings, short forms, acronyms, amounts) are read from the
        # spelling, so the words they restate are known exactly; a name the other side neither has
        # nor spells out stays a sure miss. They only ever remove misses, so without a sure miss to
        # begin with there is none after them either, and the spelling pass is not worth its cost.
        "unmatched_lexical": lambda f: (
            f.restatement_bounds.unmatched
            if f.alignment_bounds.unmatched.lo > 0
            else gate.Interval(0.0, f.alignment_bounds.unmatched.hi)
        ),
    },
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
    """One side is negated relative to the other: a negator on one side only XOR an antonym pair."""
    # Presence, not parity: "ruled out the supposed allergy" carries two cues and still negates.
    negation_differs = (tn.negation_count(old) > 0) != (tn.negation_count(new) > 0)
    old_words, new_words = tn.content_words(old), tn.content_words(new)
    antonym = any(tn.ANTONYMS.get(word, frozenset()) & new_words for word in old_words - new_words)
    antonym = antonym or tn.morphological_negation(old_words - new_words, new_words - old_words)
    return negation_differs != antonym


@lru_cache(maxsize=8192)
def pair_facts(old: str, new: str, distance: float | None) -> PairFacts:
    """What the rules read about a pair. The word and symbol rules read both texts with their
    amounts in one notation (`quantities.canonical`: "$1,800" and "eighteen hundred dollars" are
    both "1800 usd"), so a notation is never taken for a change; the word alignment reads them as
    written. `amounts_differ` compares the amounts themselves: another value, sign, unit or currency."""
    texts = (old, new)
    old, new = quantities.canonical(old), quantities.canonical(new)
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
        person_change=bool(
            ((old_words - relations.predicate_roles(old)) ^ (new_words - relations.predicate_roles(new)))
            & tn.PERSON_NOUNS
        )
        and not _person_restated(old, new),
        name_swap=bool(old_names - new_names) and bool(new_names - old_names),
        change_marker=bool((new_words - old_words) & tn.CHANGE_MARKERS),
        unit_conflict=_unit_conflict(old_words, new_words),
        time_shift=bool((old_words ^ new_words) & tn.TIME_MARKERS),
        identifiers_differ=_identifiers_differ(old, new),
        # "prefers tabs over spaces" / "prefers spaces over tabs": same words, roles exchanged.
        order_changed=(old_words == new_words and tn.content_sequence(old) != tn.content_sequence(new))
        or _names_reordered(old, new)
        or _shared_reordered(*_without_units(texts, old_words, new_words, old, new)),
        frame_share=frame[0],
        middle_old=frame[1],
        middle_new=frame[2],
        foreign_names=tn.foreign_names(old, new),
        symbols_differ=reach.symbols(old) != reach.symbols(new),
        amounts_differ=quantities.differ(*texts, tn.numbers(old), tn.numbers(new)),
        old_text=texts[0],
        new_text=texts[1],
    )


# Share of all content words both sides must hold before their order is read as the sentence's
# roles: PAWS-Wiki's non-paraphrases exchange two phrases of one sentence ("A replaced B" / "B
# replaced A"), which a word alignment cannot see; at 0.7 this stopped 23 of its 31 merged
# non-paraphrases in a 200-pair sample and one merged duplicate of memory_pairs_dev (docs/EVALUATION.md).
_REORDER_JACCARD = 0.7


def _shared_reordered(
    old_words: frozenset[str], new_words: frozenset[str], old_seq: Sequence[str], new_seq: Sequence[str]
) -> bool:
    """Nearly the same words (and at least three of them) with the shared ones in another order."""
    shared = old_words & new_words
    union = old_words | new_words
    if len(shared) < 3 or len(shared) < _REORDER_JACCARD * len(union):
        return False
    return [w for w in old_seq if w in shared] != [w for w in new_seq if w in shared]


def _without_units(
    texts: tuple[str, str], old_words: frozenset[str], new_words: frozenset[str], old: str, new: str
) -> tuple[frozenset[str], frozenset[str], list[str], list[str]]:
    """Content words and sequences of the canonical texts without the unit words of their amounts:
    an amount is one argument wherever it stands, like its number (which is no content word), so its
    unit must not make a rebuilt sentence ("$1,800 rent" / "rent of 1800 dollars") look reordered."""
    units = {tn.stem(word) for text in texts for word in quantities.unit_words(text)}
    return (
        old_words - units,
        new_words - units,
        [w for w in tn.content_sequence(old) if w not in units],
        [w for w in tn.content_sequence(new) if w not in units],
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


# Below these lengths a one-letter slip or a short form is as likely another word ("lives"/"loves",
# "art"/"artist" is caught by the stem rule, "pot"/"potato" is not an abbreviation anyone writes).
_TYPO_FROM = 6
_WRITTEN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL_PARTS = re.compile(r"[A-Z][a-z]*|[a-z]+|\d+")
_SHORT_FORM_FROM = 3


def spelling_variant(a: str, b: str) -> bool:
    """One letter left out, doubled or two neighbours exchanged ("alergic"/"allergic",
    "framwork"/"framework"). A substituted letter is not a slip this accepts: it makes real word
    pairs ("bottle"/"battle", "formal"/"normal")."""
    if a == b or min(len(a), len(b)) < _TYPO_FROM:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    if len(long) - len(short) != 1:
        return False
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def short_form(short: str, long: str) -> bool:
    """`short` abbreviates `long`: the same first letter, its letters in order, and either a prefix
    or the same last letter ("feb"/"february", "vit"/"vitamin", "nvim"/"neovim", "deps"/"dependencies")."""
    if len(short) < _SHORT_FORM_FROM or len(long) < len(short) + 2 or short[0] != long[0]:
        return False
    if long.startswith(short):
        return True
    if short[-1] != long[-1]:
        return False
    position = 0
    for ch in short:
        position = long.find(ch, position) + 1
        if not position:
            return False
    return True


def same_word(a: str, b: str) -> bool:
    """Two words (or stems) taken as one: a shared root, a listed synonym, a spelling slip or a
    short form."""
    if b in tn.SYNONYMS.get(a, frozenset()):
        return True
    return tn.same_root(a, b) or spelling_variant(a, b) or short_form(a, b) or short_form(b, a)


@dataclass(frozen=True)
class _Comparable:
    """What `same_word_in` looks up in a set of words, built once per set."""

    by_first: dict[str, tuple[str, ...]]  # shared root and short form need the same first letter
    lengths: frozenset[int]  # of the words long enough for a slip


def _swaps(word: str) -> set[str]:
    """`word` with two different neighbouring letters swapped."""
    return {
        word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        for i in range(len(word) - 1)
        if word[i] != word[i + 1]
    }


@lru_cache(maxsize=4096)
def _comparable(others: frozenset[str]) -> _Comparable:
    by_first: dict[str, list[str]] = {}
    for other in others:
        by_first.setdefault(other[:1], []).append(other)
    lengths = frozenset(len(o) for o in others if len(o) >= _TYPO_FROM)
    return _Comparable({k: tuple(v) for k, v in by_first.items()}, lengths)


def _slip_of_one(word: str, others: frozenset[str], lengths: frozenset[int]) -> bool:
    """`word` is one of `others` (one long enough for a slip) with a letter dropped or two
    neighbouring letters swapped. Looked up from the word's side: building every other's slips
    cost a search's collapse ~140 us per text it had not met, for the one or two words it asks."""
    if len(word) in lengths and not others.isdisjoint(_swaps(word)):
        return True
    longer = len(word) + 1
    return longer in lengths and any(
        len(other) == longer and any(other[:i] + other[i + 1 :] == word for i in range(longer))
        for other in others
    )


def same_word_in(word: str, others: frozenset[str]) -> bool:
    """Whether `word` is one of `others` by `same_word`, without comparing it with each: a shared
    root and a short form need the same first letter, and a spelling slip is looked up by length
    (a search's collapse asks this of every word of every pair it reads)."""
    if not word:
        return False
    if others & tn.SYNONYMS.get(word, frozenset()):
        return True
    index = _comparable(others)
    if any(same_word(word, other) for other in index.by_first.get(word[0], ())):
        return True
    if len(word) < _TYPO_FROM:
        return False
    # `word` is another's slip (a letter of it dropped, two swapped), or another is `word` with a
    # letter dropped (the other may be no shorter than _TYPO_FROM either).
    if _slip_of_one(word, others, index.lengths):
        if word not in others:
            return True
        # `word` is itself one of the others (never a slip of itself): compare it with the rest.
        if any(other != word and spelling_variant(word, other) for other in others):
            return True
    if len(word) - 1 not in index.lengths:
        return False
    return any(word[:i] + word[i + 1 :] in others for i in range(len(word)))


def _initials(words: Sequence[str]) -> str:
    return "".join(w[0] for w in words).casefold()


def _written_words(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _WRITTEN_WORD.finditer(text)]


def _restates(word: str, other: str) -> bool:
    """`word` written as `other` with a slip or as its short form (what `_restated_in` asks of
    every word of a text at once)."""
    return spelling_variant(word, other) or short_form(word, other)


@dataclass(frozen=True)
class _WrittenText:
    """What lexical_counterparts reads of one text, computed once per text: a search's rows meet
    one another in many pairs, and spelling them out again for each pair was most of its cost."""

    spans: tuple[tuple[str, int, int, bool], ...]
    folded: tuple[str, ...]  # per span, the word as `_restates` compares it
    written: tuple[tuple[str, int, int], ...]
    # The written words' first letters, casefolded, one character per word (written words are
    # ASCII): a run of words with given initials is a substring here (`runs`).
    initials: str
    # The only words short_form can accept for a given word: those with its first letter.
    by_first: dict[str, tuple[str, ...]]
    # What an acronym of the other text can stand for here: the content words written in camel
    # case (index, number of parts) by their initials (runs of written words: `runs`).
    camel: dict[str, tuple[tuple[int, int], ...]]
    # spelling_variant as set lookups: the words long enough for a slip, and every string one of
    # them gives with one letter left out (a word that is one of those is the slip of a longer one).
    slip_words: frozenset[str]
    slip_deletions: frozenset[str]

    def runs(self, letters: str) -> list[int]:
        """The first written words of the runs of len(letters) words whose initials are `letters`.
        Searched when asked rather than tabled per text: every text a search judges built a table
        of every run of two to five words, and only a text whose pair has an acronym is asked."""
        found, start = [], self.initials.find(letters)
        while start >= 0:
            found.append(start)
            start = self.initials.find(letters, start + 1)
        return found


# An acronym has two to five letters (lexical_counterparts).
_ACRONYM_LENGTHS = range(2, 6)


@lru_cache(maxsize=8192)
def _written_text(text: str) -> _WrittenText:
    spans = tuple(content_spans(text))
    folded = tuple(text[s:e].casefold().removesuffix("'s") for _, s, e, _ in spans)
    written = tuple(_written_words(text))
    by_first: dict[str, list[str]] = {}
    for word in folded:
        if word:
            by_first.setdefault(word[0], []).append(word)
    camel: dict[str, list[tuple[int, int]]] = {}
    for j, (_, s, e, _) in enumerate(spans):
        parts = _CAMEL_PARTS.findall(text[s:e])
        if len(parts) > 1:
            camel.setdefault(_initials(parts), []).append((j, len(parts)))
    slip_words = frozenset(w for w in folded if len(w) >= _TYPO_FROM)
    return _WrittenText(
        spans=spans,
        folded=folded,
        written=written,
        initials="".join(w[0].casefold() for w, _, _ in written),
        by_first={first: tuple(words) for first, words in by_first.items()},
        camel={key: tuple(found) for key, found in camel.items()},
        slip_words=slip_words,
        slip_deletions=frozenset(
            w[:i] + w[i + 1 :] for w in slip_words if len(w) > _TYPO_FROM for i in range(len(w))
        ),
    )


def _restated_in(word: str, other: _WrittenText) -> bool:
    """Whether `_restates(word, w)` or `_restates(w, word)` holds for any content word w of
    `other`, without comparing word pairs for slips: a slip (spelling_variant, both at least
    _TYPO_FROM long, the same either way round) is `word` with a letter left out, a letter added, or
    two different neighbours exchanged, each a set lookup; a short form needs a word two or more
    letters longer with the same first letter (either side may be the short one)."""
    size = len(word)
    if size >= _TYPO_FROM:
        if word in other.slip_deletions:  # a letter of a longer word left out
            return True
        words = other.slip_words
        if size > _TYPO_FROM and any(word[:i] + word[i + 1 :] in words for i in range(size)):
            return True  # a letter added to a shorter word
        for i in range(size - 1):
            if word[i] != word[i + 1] and word[:i] + word[i + 1] + word[i] + word[i + 2 :] in words:
                return True  # two different neighbours exchanged
    firsts = other.by_first.get(word[0], ())
    if size >= _SHORT_FORM_FROM and any(len(w) >= size + 2 and short_form(word, w) for w in firsts):
        return True
    # The other way round: `other` writes this word short ("Neovim" restated by "nvim",
    # "PostgreSQL" by "Postgres"). Restating is mutual; read one way only, the long form stayed
    # unmatched while its short form counted as restated.
    return size >= _SHORT_FORM_FROM + 2 and any(
        _SHORT_FORM_FROM <= len(w) <= size - 2 and short_form(w, word) for w in firsts
    )


@lru_cache(maxsize=8192)
def lexical_counterparts(text: str, other: str) -> tuple[frozenset[int], frozenset[int]]:
    """Which content words of `text` (indices into alignment.content_spans) have a written
    counterpart in `other` that the token vectors miss, and which of `other`'s content words an
    acronym in `text` spells out ("BMI" stands for "body mass index": all four are restated).
    Cached per pair: the gate reads it before the token model runs, the restatement after."""
    mine, theirs = _written_text(text), _written_text(other)
    other_spans = theirs.spans
    restated: set[int] = set(_amount_words(text, other))
    spelled: set[int] = set()
    written = theirs.written
    for index, (_, start, end, _) in enumerate(mine.spans):
        word = text[start:end]
        folded = mine.folded[index]
        if _restated_in(folded, theirs):
            restated.add(index)
            continue
        if len(word) in _ACRONYM_LENGTHS and word.isalpha() and (word.isupper() or len(word) >= 3):
            # An acronym: the initials of a run of as many words on the other side (written words
            # are ASCII, so a run's initials are as many letters), or of one camel-case name there
            # (TS/TypeScript).
            # A letter that casefolds to two ("ß") makes a key no run of len(word) words has.
            for first in theirs.runs(folded) if len(folded) == len(word) else ():
                run = written[first : first + len(word)]
                restated.add(index)
                lo, hi = run[0][1], run[-1][2]
                spelled |= {j for j, (_, s, e, _) in enumerate(other_spans) if s >= lo and e <= hi}
            for j, parts in theirs.camel.get(folded, ()):
                if parts == len(word):
                    restated.add(index)
                    spelled.add(j)
    return frozenset(restated), frozenset(spelled)


def _amount_words(text: str, other: str) -> list[int]:
    """Content words of `text` (indices into content_spans) that belong to an amount `other` states
    too, in any notation: "dollars" in "eighteen hundred dollars" when the other side says "$1,800"."""
    stated = quantities.quantities(other)
    amounts = [(start, end) for start, end, amount in quantities.spans(text) if amount in stated]
    if not amounts:  # most texts state none: no need to walk their words
        return []
    return [
        index
        for index, (_, start, end, _) in enumerate(_written_text(text).spans)
        if any(lo <= start and end <= hi for lo, hi in amounts)
    ]


def lexical_alignment(old: str, new: str) -> Alignment:
    """`align` with lexical counterparts counted as exact ones (see PairFacts.restatement)."""
    old_tokens, new_tokens = token_encoder().tokens([old, new])
    old_cover, new_cover = coverage(old_tokens, new_tokens), coverage(new_tokens, old_tokens)
    old_own, new_spelled = lexical_counterparts(old, new)
    new_own, old_spelled = lexical_counterparts(new, old)
    # coverage() of a text without content words is a single 1.0, which nothing here can raise.
    for cover, indices in ((old_cover, old_own | old_spelled), (new_cover, new_own | new_spelled)):
        cover[[i for i in indices if i < len(cover)]] = 1.0
    return alignment_of(old_cover, new_cover)
