"""The offline judge: rules for the unmistakable patterns, a small fitted model for paraphrase.

Order matters and every rule errs toward review: a changed number, a flipped polarity or another
person can at most queue a pair as a possible duplicate, never merge it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from memory_app.judge.base import JudgeItem, Judgement
from memory_app.judge.calibration.params import Calibration, load_calibration
from memory_app.judge.policy import DISTINCT_SURE, acts_on
from memory_app.judge.signals import gate, quantities, reach, relations
from memory_app.judge.signals import text_norm as tn
from memory_app.judge.signals.alignment import Alignment, token_encoder
from memory_app.judge.signals.features import PairFacts, cosine_distance, pair_facts

# Confidence the rules give their own verdicts; review_below decides what acts on them.
SURE = 0.99
LIKELY = 0.75
FRAME_SWAP = "a phrase exchanged in the same frame"
ORDER_CHANGED = "same words in another order"


def duplicate_probability(facts: PairFacts, cal: Calibration) -> float:
    """The fitted logistic model's P(duplicate | not refine) for one pair."""
    if not cal.coef:
        return 0.0
    x = facts.vector(cal.default_distance, cal.feature_names, cal.features)
    z = (x - np.asarray(cal.mean)) / np.asarray(cal.scale)
    score = float(z @ np.asarray(cal.coef) + cal.intercept)
    return 1.0 / (1.0 + math.exp(-score))


def duplicate_probability_bound(facts: PairFacts, cal: Calibration) -> float:
    """An upper bound of duplicate_probability() that never runs the token model (judge/signals/gate.py)."""
    if not cal.coef:
        return 0.0
    lo, hi = facts.intervals(cal.default_distance, cal.feature_names, cal.features)
    score = gate.score_upper_bound(
        lo, hi, mean=cal.mean, scale=cal.scale, coef=cal.coef, intercept=cal.intercept
    )
    return gate.probability_upper_bound(score)


def vetoed(facts: PairFacts) -> str:
    """Why this pair must not be merged without a human, or '' when nothing forbids it."""
    if facts.numbers_differ or facts.calendar_swap:
        return "numbers or dates differ"
    if facts.amounts_differ:
        return "amounts, units or currencies differ"
    if facts.symbols_differ:
        return "signs or symbols differ"
    if facts.identifiers_differ:
        return "identifiers differ"
    if facts.unit_conflict:
        return "units differ"
    if facts.time_shift:
        return "another time"
    if facts.polarity_flip:
        return "polarity flipped"
    if facts.person_change or facts.possessor_change:
        return "about another person"
    if facts.change_marker:
        return "states a change"
    if facts.single_swap:
        return "one word exchanged"
    if facts.order_changed:
        return ORDER_CHANGED
    if facts.frame_swap:
        return FRAME_SWAP
    if facts.foreign_names:
        return "names another thing"
    return ""


class NeedsAlignment:
    """judge_from_words' answer when the verdict needs the word alignment (the token model)."""

    def __repr__(self) -> str:
        return "NEEDS_ALIGNMENT"


NEEDS_ALIGNMENT = NeedsAlignment()
Verdict = Judgement | NeedsAlignment


@dataclass
class PairReading:
    """One pair as the rules read it: each fact is computed once, on the first rule that asks.
    With `words_only`, a fact that needs the word alignment (not known already) is NEEDS_ALIGNMENT
    instead of running the token model."""

    old: str
    new: str
    distance: float | None
    cal: Calibration
    gated: bool = True
    words_only: bool = False

    @cached_property
    def facts(self) -> PairFacts:
        return pair_facts(self.old, self.new, self.distance)

    @cached_property
    def word_veto(self) -> str:
        """vetoed(), but for a phrase moved within the sentence, which is no change of role."""
        veto = vetoed(self.facts)
        if veto == ORDER_CHANGED and relations.moved_phrase(self.old, self.new):
            return ""
        return veto

    @cached_property
    def other_subject(self) -> bool:
        return self.facts.person_change or self.facts.possessor_change

    @cached_property
    def slot_update(self) -> bool:
        """A vetoed pair with one or two words exchanged in the same frame, about the same subject."""
        return bool(self.word_veto) and self.facts.slot_swap and not self.other_subject

    @cached_property
    def probability(self) -> float | NeedsAlignment:
        """The model's P(duplicate), or the gate's bound when that gives the same verdict."""
        facts, cal = self.facts, self.cal
        bound = duplicate_probability_bound(facts, cal) if self.gated else 1.0
        if bound < cal.review_floor and (bound <= 0.5 or not self.slot_update):
            # Even the best alignment leaves the pair below the floor (and a slot update at its 0.5
            # minimum): every rule below gives the verdict the exact probability gives, so the token
            # model is skipped. Only a distinct verdict's confidence is then the bound's, a lower one.
            p = bound
        elif self.words_only and not facts.features_known(cal.feature_names, cal.features):
            return NEEDS_ALIGNMENT
        else:
            p = duplicate_probability(facts, cal)
        if self.distance is None:
            # Without vectors the model lacks its strongest input: never act on it, at most review.
            p = min(p, cal.review_below - 1e-6)
        return p

    def restatement(self) -> Alignment | NeedsAlignment:
        if self.words_only and not self.facts.known("restatement"):
            return NEEDS_ALIGNMENT
        return self.facts.restatement

    @cached_property
    def veto(self) -> str | NeedsAlignment:
        """word_veto, lifted for an exchanged phrase that restates the other one word for word."""
        p, facts = self.probability, self.facts
        if isinstance(p, NeedsAlignment):
            return p
        if self.word_veto == FRAME_SWAP and not facts.foreign_names and p >= self.cal.review_below:
            # The exchanged phrase may restate the other one word for word by meaning ("grew up" /
            # "spent her childhood", "planning a trip" / "intend to travel"): the veto guards against
            # another object in the same frame ("allergic to [peanuts | tree nuts]"), which leaves a
            # word without a counterpart. The veto checked after it (foreign names) still holds.
            # p >= review_below means the exact alignment is known already.
            restated = self.restatement()
            if isinstance(restated, NeedsAlignment):
                return restated
            if restated.unmatched == 0:
                return ""
        return self.word_veto


# The rules, in the order docs/JUDGE.md lists them: each returns a verdict or None (the next rule
# speaks); the last one always speaks.


def same_surface(r: PairReading) -> Verdict | None:
    if reach.surface(r.old) == reach.surface(r.new):
        return Judgement("duplicate", 1.0, reason="same text but for case and spacing")
    return None


def outside_fitted(r: PairReading) -> Verdict | None:
    unreadable = reach.outside(r.old, r.new, r.cal.max_words)
    if unreadable:
        # Stored as is: not a merge (no evidence) and not a review (nothing a person should check).
        return Judgement("distinct", SURE, reason=unreadable)
    return None


def _both_true(relation: Callable[[str, str], str]) -> Callable[[PairReading], Verdict | None]:
    """A rule finding two facts both true (another item, occasion or subject): stored, and nothing
    to review."""

    def rule(r: PairReading) -> Verdict | None:
        another = relation(r.old, r.new)
        return Judgement("distinct", SURE, reason=another) if another else None

    rule.__name__ = relation.__name__
    return rule


def same_words(r: PairReading) -> Verdict | None:
    """ "User prefers X" / "The user prefers X.": the fitted model never saw a pair without a single
    differing word and scores it poorly, so this is decided before it. Amounts are read in one
    notation ("$5" / "5 dollars") and must be the same ones."""
    if quantities.quantities(r.old) != quantities.quantities(r.new):
        return None
    old_read, new_read = quantities.canonical(r.old), quantities.canonical(r.new)
    if reach.symbols(old_read) == reach.symbols(new_read) and tn.bare_tokens(old_read) == tn.bare_tokens(
        new_read
    ):
        return Judgement("duplicate", SURE, reason="same words but for articles")
    return None


def changed_value(r: PairReading) -> Verdict | None:
    """A changed value in the same frame (same words, a different number or a stated change)."""
    facts = r.facts
    changed = facts.number_conflict or facts.calendar_swap or facts.change_marker
    if r.other_subject or facts.jaccard < 0.5 or not changed:
        return None
    # Sure only when nothing but numbers and change words differ; "the 8:05 train to work" vs
    # "the 5:40 train home" differs in a word too, and may be another fact.
    same_frame = not facts.only_old and not (facts.only_new - tn.CHANGE_MARKERS - relations.VALUE_CHANGE)
    if not same_frame:
        # Other words changed too: sure only when they state a change of the same attribute.
        change = relations.state_change(r.old, r.new)
        same_frame = change is not None and change.sure
    return Judgement("update", SURE if same_frame else LIKELY, reason=r.word_veto)


def state_change(r: PairReading) -> Verdict | None:
    change = None if r.other_subject else relations.state_change(r.old, r.new)
    if change is not None:
        return Judgement("update", SURE if change.sure else LIKELY, reason=change.reason)
    return None


def adds_detail(r: PairReading) -> Verdict | None:
    if r.facts.new_contains_old and not r.word_veto and not r.facts.name_swap:
        return Judgement("refine", SURE if r.distance is not None else LIKELY, reason="adds detail")
    return None


def exchanged_phrase(r: PairReading) -> Verdict | None:
    """Each side puts words of its own into one frame and neither restates the other's ("passport"
    / "spare keys" in the desk drawer): two facts, not a doubt to review. Only a pair that would
    otherwise be queued is read for an exchanged phrase: one stored or merged anyway needs no word
    alignment for it."""
    p, veto, cal = r.probability, r.veto, r.cal
    if isinstance(p, NeedsAlignment) or isinstance(veto, NeedsAlignment):
        return NEEDS_ALIGNMENT
    queued = (veto and r.slot_update) or (p >= cal.review_floor and (bool(veto) or p < cal.review_below))
    if not queued or r.facts.numbers_differ or r.facts.change_marker:
        return None
    exchanged = relations.exchanged_phrase(r.old, r.new)
    if not exchanged:
        return None
    restated = r.restatement()
    if isinstance(restated, NeedsAlignment):
        return restated
    if restated.unmatched_old and restated.unmatched_new:
        return Judgement("distinct", SURE, reason=exchanged)
    return None


def _capped_probability(r: PairReading) -> tuple[float, str] | NeedsAlignment:
    """The probability, held below review_below when a veto forbids acting on it, and the veto."""
    p, veto = r.probability, r.veto
    if isinstance(p, NeedsAlignment) or isinstance(veto, NeedsAlignment):
        return NEEDS_ALIGNMENT
    return (min(p, r.cal.review_below - 1e-6) if veto else p), veto


def slot_update(r: PairReading) -> Verdict | None:
    capped = _capped_probability(r)
    if isinstance(capped, NeedsAlignment):
        return capped
    p, veto = capped
    if veto and r.slot_update:
        return Judgement("update", max(p, 0.5), reason=f"one slot changed; {veto}")
    return None


def paraphrase_model(r: PairReading) -> Verdict | None:
    """The fitted model, a vetoed pair held below review_below (at most a review). Below the
    calibrated floor the pair is distinct with at least even confidence: the floor, not decide()'s
    generic "unsure distinct" rule, is what sends a pair to review."""
    capped = _capped_probability(r)
    if isinstance(capped, NeedsAlignment):
        return capped
    p, veto = capped
    if p >= r.cal.review_floor:
        return Judgement("duplicate", p, reason=veto or "paraphrase model")
    return Judgement("distinct", max(1.0 - p, DISTINCT_SURE), reason=veto or "paraphrase model")


RULES: tuple[Callable[[PairReading], Verdict | None], ...] = (
    same_surface,
    outside_fitted,
    _both_true(relations.other_item),
    _both_true(relations.other_occasion),
    _both_true(relations.other_subject),
    _both_true(relations.antonym_and_swap),
    same_words,
    changed_value,
    state_change,
    adds_detail,
    exchanged_phrase,
    slot_update,
    paraphrase_model,
)


def _walk(reading: PairReading) -> Verdict:
    for rule in RULES:
        verdict = rule(reading)
        if verdict is not None:
            return verdict
    raise AssertionError("paraphrase_model always gives a verdict")


def judge_pair(
    old: str, new: str, distance: float | None, cal: Calibration, *, gated: bool = True
) -> Judgement:
    """The relation of `new` to `old`: the first of RULES that speaks. `gated=False` always
    computes the exact probability (the gate's own tests compare both)."""
    verdict = _walk(PairReading(old, new, distance, cal, gated=gated))
    assert isinstance(verdict, Judgement)  # without words_only every fact is computed
    return verdict


def judge_from_words(old: str, new: str, distance: float | None, cal: Calibration) -> Verdict:
    """judge_pair's verdict when the rules or the gate give it from the words alone (or the pair's
    alignment is known already), else NEEDS_ALIGNMENT: the verdict needs the word alignment, and
    judge_pair computes it."""
    return _walk(PairReading(old, new, distance, cal, words_only=True))


class OfflineJudge:
    name = "offline"

    def __init__(self, calibration: Calibration | None = None) -> None:
        self._calibration = calibration

    @property
    def calibration(self) -> Calibration:
        if self._calibration is None:
            self._calibration = load_calibration()
        return self._calibration

    def judge(self, new: JudgeItem, candidates: list[JudgeItem]) -> list[Judgement]:
        cal = self.calibration
        pairs = [(c.text, new.text, _distance(new, c)) for c in candidates]
        prefetch_tokens(pairs, cal)
        return [judge_pair(old, new_text, distance, cal) for old, new_text, distance in pairs]

    def judge_for_decision(
        self, new: JudgeItem, candidates: list[JudgeItem], *, review_below: float
    ) -> list[Judgement]:
        """Judgements from which `policy.decide(..., review_below=review_below)` takes the decision
        it would take from `judge()`'s, running the token model only when that decision needs it.

        The rules and the gate judge every pair from its words first. When one of them gives an
        actionable verdict that no pair still waiting for the word alignment can outbid (their
        confidence is at most the gate's bound), those pairs are left unjudged: each gets a
        placeholder, a `distinct` verdict at DISTINCT_SURE that decide() passes over, with a
        reason saying so. Otherwise the waiting pairs are judged in full, their texts' token
        vectors fetched in one call (stored rows, then one batched forward pass)."""
        cal = self.calibration
        pairs = [(c.text, new.text, _distance(new, c)) for c in candidates]
        found = [judge_from_words(*pair, cal) for pair in pairs]
        waiting = [i for i, verdict in enumerate(found) if isinstance(verdict, NeedsAlignment)]
        if not waiting:
            return [j for j in found if isinstance(j, Judgement)]
        decided = _decided_without(found, waiting, pairs, cal, review_below=review_below)
        if decided is not None:
            reason = f"not judged: the verdict on candidate {decided} decides"
            placeholder = Judgement("distinct", DISTINCT_SURE, reason=reason)
            return [j if isinstance(j, Judgement) else placeholder for j in found]
        return _judged_in_full(found, pairs, cal)

    def judge_pairs(self, pairs: Sequence[tuple[JudgeItem, JudgeItem]]) -> list[Judgement]:
        """`judge(new, [old])[0]` for each (new, old) pair, reading each pair's words once. A pair
        whose texts' vectors are at hand without the model (held, or stored rows: load-time
        collapse judges stored memories) is judged at once; of the others, a pair the rules or the
        gate decide from its words keeps that verdict (the one judge_pair gives), and the rest are
        judged in full after one token-vector fetch for all their texts (one batched forward
        pass). Load-time collapse judges ~25 pairs a search."""
        cal = self.calibration
        triples = [(old.text, new.text, _distance(new, old)) for new, old in pairs]
        at_hand = token_encoder().available([text for triple in triples for text in triple[:2]])
        found: list[Verdict] = [
            judge_pair(*triple, cal)
            if triple[0] in at_hand and triple[1] in at_hand
            else judge_from_words(*triple, cal)
            for triple in triples
        ]
        return _judged_in_full(found, triples, cal)


def _judged_in_full(
    found: list[Verdict], pairs: Sequence[tuple[str, str, float | None]], cal: Calibration
) -> list[Judgement]:
    """`found` with each pair still without a verdict judged in full, after one token-vector fetch
    for all their texts (stored rows, then one batched forward pass)."""
    waiting = [i for i, verdict in enumerate(found) if isinstance(verdict, NeedsAlignment)]
    if waiting:
        token_encoder().tokens([text for i in waiting for text in pairs[i][:2]])
    return [
        verdict if isinstance(verdict, Judgement) else judge_pair(*pair, cal)
        for pair, verdict in zip(pairs, found, strict=True)
    ]


def _distance(new: JudgeItem, old: JudgeItem) -> float | None:
    return old.distance if old.distance is not None else cosine_distance(new.embedding, old.embedding)


def _decided_without(
    found: Sequence[Verdict],
    waiting: Sequence[int],
    pairs: Sequence[tuple[str, str, float | None]],
    cal: Calibration,
    *,
    review_below: float,
) -> int | None:
    """The candidate whose known verdict decide() acts on whatever the waiting pairs' verdicts turn
    out to be, or None. A waiting pair's verdict comes after the gate: a duplicate at its exact
    probability (at most the bound), an update capped below review_below, or a distinct one, so
    its confidence as an actionable verdict is at most its bound. decide() takes the most
    confident actionable verdict, the lower index on a tie; the known one must win against every
    bound."""
    known = [
        (judgement.confidence, i)
        for i, judgement in enumerate(found)
        if isinstance(judgement, Judgement) and acts_on(judgement, review_below=review_below)
    ]
    if not known:
        return None
    confidence, index = max(known, key=lambda item: (item[0], -item[1]))
    for i in waiting:
        bound = duplicate_probability_bound(pair_facts(*pairs[i]), cal)
        if bound > confidence or (bound == confidence and i < index):
            return None
    return index


def needs_alignment(old: str, new: str, distance: float | None, cal: Calibration) -> bool:
    """Whether judge_pair reads the word alignment for this pair: the rules and the gate decide
    most pairs from the words' spelling alone."""
    return isinstance(judge_from_words(old, new, distance, cal), NeedsAlignment)


def prefetch_tokens(pairs: Sequence[tuple[str, str, float | None]], cal: Calibration) -> None:
    """One batched forward pass for all texts whose token vectors these pairs will read and the
    encoder does not hold yet (one text costs ~16 ms alone, ~4.5 ms in a batch)."""
    encoder = token_encoder()
    held = encoder.known([text for old, new, _ in pairs for text in (old, new)])
    # A pair whose texts the encoder holds has nothing to fetch, and a lone pair left is fetched
    # by judge_pair itself in the same one call (`text_alignment`): neither is worth running the
    # rules an extra time to find whether it reads the alignment.
    waiting = [(old, new, d) for old, new, d in pairs if old not in held or new not in held]
    if len(waiting) < 2:
        return
    texts = [text for old, new, d in waiting if needs_alignment(old, new, d, cal) for text in (old, new)]
    if texts:
        encoder.tokens(texts)
