"""The exact gate before the token model: pure bounds on arrays, and the gated judge against the
ungated one (the gate may only skip work, never change a verdict)."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_app.judge.base import JudgeItem
from memory_app.judge.calibration.params import Calibration, load_calibration
from memory_app.judge.offline import (
    NeedsAlignment,
    OfflineJudge,
    judge_from_words,
    judge_pair,
    needs_alignment,
)
from memory_app.judge.policy import DISTINCT_SURE, Decision, decide
from memory_app.judge.signals import alignment, gate
from memory_app.judge.signals import features as judge_features
from memory_app.judge.signals.alignment import MATCHED, TextTokens, align, coverage, spelled
from memory_app.judge.signals.features import RUNTIME_FEATURES, FeatureSet, pair_facts
from memory_eval.features import CANDIDATE_FEATURES

finite = st.floats(min_value=-5, max_value=5, allow_nan=False)
# Five arrays of one length n (two box ends, mean, coef, scale), drawn as one flat list.
box_values = st.integers(min_value=1, max_value=4).flatmap(
    lambda n: st.lists(finite, min_size=5 * n, max_size=5 * n)
)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=1, max_value=4).flatmap(lambda n: st.lists(finite, min_size=5 * n, max_size=5 * n))
)
def test_the_score_bound_is_the_largest_score_over_the_corners_of_the_box(values):
    n = len(values) // 5
    a, b, mean, coef, scale = (np.array(values[i * n : (i + 1) * n]) for i in range(5))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    scale = np.abs(scale) + 0.1
    bound = gate.score_upper_bound(lo, hi, mean=mean, scale=scale, coef=coef, intercept=0.3)
    corners = [
        0.3 + float(coef @ ((np.where(np.array(pick), hi, lo) - mean) / scale))
        for pick in itertools.product([False, True], repeat=n)
    ]
    assert bound == pytest.approx(max(corners), abs=1e-9)


def test_an_unbounded_feature_disables_the_gate_unless_its_weight_is_zero():
    lo, hi = np.array([0.0, -math.inf]), np.array([1.0, math.inf])
    weighted = gate.score_upper_bound(lo, hi, mean=[0, 0], scale=[1, 1], coef=[1.0, -0.5], intercept=0.0)
    assert gate.probability_upper_bound(weighted) == 1.0
    unweighted = gate.score_upper_bound(lo, hi, mean=[0, 0], scale=[1, 1], coef=[1.0, 0.0], intercept=0.0)
    assert unweighted == pytest.approx(1.0)


def _tokens(draw_stems: list[str], draw_names: list[bool], rng: np.random.Generator) -> TextTokens:
    vectors = rng.standard_normal((len(draw_stems), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return TextTokens(stems=tuple(draw_stems), names=tuple(draw_names), vectors=vectors)


words = st.lists(st.tuples(st.sampled_from("abcdefgh"), st.booleans()), max_size=6)


@settings(max_examples=300, deadline=None)
@given(words, words, st.integers(min_value=0, max_value=10_000))
def test_spelling_bounds_contain_the_alignment_whatever_the_token_vectors(old_words, new_words, seed):
    rng = np.random.default_rng(seed)
    old = _tokens([w for w, _ in old_words], [n for _, n in old_words], rng)
    new = _tokens([w for w, _ in new_words], [n for _, n in new_words], rng)
    old_bounds = gate.coverage_bounds(old.stems, old.names, new.stems)
    new_bounds = gate.coverage_bounds(new.stems, new.names, old.stems)
    for exact, bounds in ((coverage(old, new), old_bounds), (coverage(new, old), new_bounds)):
        assert np.all(bounds.lo <= exact + 1e-6) and np.all(exact <= bounds.hi + 1e-6)
    found, box = align(old, new), gate.alignment_bounds(old_bounds, new_bounds)
    for field in ("cover_old", "cover_new", "worst", "unmatched"):
        interval = getattr(box, field)
        assert interval.lo - 1e-6 <= getattr(found, field) <= interval.hi + 1e-6, field


def test_a_missing_name_is_a_sure_miss_and_a_shared_stem_a_sure_match():
    bounds = gate.coverage_bounds(("tim", "hike", "park"), (True, False, False), ("hike", "mountain"))
    assert list(bounds.hi) == [0.0, 1.0, 1.0]
    assert list(bounds.lo) == [0.0, 1.0, 0.0]
    box = gate.alignment_bounds(bounds, gate.coverage_bounds(("hike", "mountain"), (False, False), ("tim",)))
    assert box.unmatched.lo == 1 and box.unmatched.hi == 4
    assert MATCHED > 0.0


def test_every_feature_that_reads_the_alignment_has_a_bound():
    facts = pair_facts("Evan hikes in the park", "Evan likes hiking", 0.3)
    for name in CANDIDATE_FEATURES.values:
        lo, hi = facts.intervals(0.3, (name,), CANDIDATE_FEATURES)
        assert math.isfinite(lo[0]) and math.isfinite(hi[0]), name


def test_each_feature_reads_exactly_the_alignment_it_declares():
    base = pair_facts("Evan hikes in the park", "Evan likes hiking", 0.3)
    for name, feature in CANDIDATE_FEATURES.values.items():
        facts = replace(base)  # a fresh instance: nothing computed yet
        feature(facts, 0.3)
        read = {prop for prop in ("alignment", "restatement") if facts.known(prop)}
        reads = CANDIDATE_FEATURES.reads
        assert read == ({reads[name]} if name in reads else set()), name


def test_a_feature_that_reads_the_alignment_without_a_bound_is_unbounded():
    squared = FeatureSet(
        {"cover_squared": lambda f, d: f.alignment.cover_min**2}, {"cover_squared": "alignment"}, {}
    )
    features = CANDIDATE_FEATURES.extended(squared)
    facts = pair_facts("Tim hikes", "John swims", 0.3)
    lo, hi = facts.intervals(0.3, ("cover_squared", "distance"), features)
    assert lo[0] == -math.inf and hi[0] == math.inf
    assert lo[1] == hi[1] == 0.3


# A fitted-looking calibration whose only input is the count of unmatched words: two or more sure
# misses (names the other side lacks) keep any pair below its floor.
NAMES_CAL = Calibration(
    model="test",
    candidate_radius=0.6,
    review_below=0.8,
    review_floor=0.6,
    feature_names=("unmatched_words", "distance"),
    mean=(2.0, 0.3),
    scale=(1.0, 0.1),
    coef=(-3.0, -0.5),
    intercept=1.0,
    features=CANDIDATE_FEATURES,
)


def test_the_gate_skips_the_token_model_when_no_alignment_can_reach_the_floor():
    old, new = "Caroline went hiking with Melanie in May", "Caroline went hiking with Jon and Gina"
    assert not needs_alignment(old, new, 0.3, NAMES_CAL)
    assert needs_alignment(old, new, 0.3, replace(NAMES_CAL, coef=(-0.1, -0.5)))


PAIRS = [
    ("Caroline went hiking with Melanie", "Caroline went hiking with Jon and Gina"),
    ("User likes hiking in the mountains", "User enjoys mountain hikes"),
    ("Evan struggles to find his keys frequently", "Evan got a symbol that represents strength"),
    ("Fred plays the guitar", "Fred now lives in Hamburg"),
    ("Gina likes to sit by the window when flying", "Gina is afraid of heights"),
    ("Maria shares a beach memory from Florida", "When Maria was younger, her family had money problems"),
    ("User prefers dark mode in editors", "The user likes dark mode in their editor"),
    ("Melanie painted a sunset with her kids", "Melanie and her children painted a sunset"),
    ("Jon lost his job as a banker", "Jon decided to open a dance studio"),
    ("Tim is reading a book about dragons", "Tim is reading a fantasy novel by Tolkien"),
    ("Caroline went hiking with Melanie and Jon", "Caroline went swimming with Gina and Tim"),
]


@pytest.mark.parametrize("cal_name", ["committed", "names"])
def test_the_gated_judge_gives_the_ungated_verdict_on_every_pair(cal_name):
    cal = load_calibration("all-MiniLM-L6-v2") if cal_name == "committed" else NAMES_CAL
    pair_facts.cache_clear()  # an alignment computed by an earlier test would make every bound exact
    skipped = 0
    for (old, new), distance in itertools.product(PAIRS, (0.1, 0.3, 0.5, None)):
        gated_needs = needs_alignment(old, new, distance, cal)
        gated, exact = judge_pair(old, new, distance, cal), judge_pair(old, new, distance, cal, gated=False)
        assert (gated.relation, gated.reason) == (exact.relation, exact.reason), (old, new)
        if gated.relation != "distinct":
            assert gated.confidence == exact.confidence
        else:
            assert gated.confidence <= exact.confidence + 1e-9  # the bound's: never surer than exact
        skipped += not gated_needs
    assert skipped > 0  # the gate did fire on these pairs, with either calibration


def test_judging_from_the_words_gives_judge_pairs_verdict_or_asks_for_the_alignment():
    cal = load_calibration("all-MiniLM-L6-v2")
    pair_facts.cache_clear()  # cold: no alignment known yet
    asked = 0
    for (old, new), distance in itertools.product(PAIRS, (0.3, None)):
        verdict = judge_from_words(old, new, distance, cal)
        if isinstance(verdict, NeedsAlignment):
            asked += 1
            judge_pair(old, new, distance, cal)
            # Once judge_pair has read the alignment, the words-only walk needs nothing more.
            verdict = judge_from_words(old, new, distance, cal)
        assert verdict == judge_pair(old, new, distance, cal), (old, new, distance)
    assert 0 < asked < 2 * len(PAIRS)


LEXICAL_PAIRS = [
    ("User's target BMI is 23", "User is aiming for a body mass index of 23"),
    ("User switched from vim to nvim", "User moved from Vim to Neovim"),
    ("User is alergic to shellfish", "User is allergic to shellfish and Jon to nuts"),
    ("Caroline met Melanie in Feb", "Caroline met Mel in February"),
]


@pytest.mark.parametrize(("old", "new"), PAIRS + LEXICAL_PAIRS)
def test_the_lexical_bounds_contain_the_restatement_the_token_model_gives(old, new):
    pair_facts.cache_clear()
    facts = pair_facts(old, new, 0.3)
    box, exact = facts.restatement_bounds, facts.restatement
    for field in ("cover_old", "cover_new", "worst", "unmatched"):
        interval = getattr(box, field)
        assert interval.lo - 1e-6 <= getattr(exact, field) <= interval.hi + 1e-6, (field, old, new)


def test_names_that_the_other_side_neither_has_nor_spells_out_are_sure_lexical_misses():
    facts = pair_facts("Caroline went hiking with Melanie", "Caroline went hiking with Jon and Gina", 0.3)
    lo, _ = facts.intervals(0.3, ("unmatched_lexical",), RUNTIME_FEATURES)
    assert lo[0] == 3  # Melanie, Jon, Gina
    # An acronym spelled out on the other side is restated, not a miss.
    spelled_out = pair_facts("User's target BMI is 23", "User is aiming for a body mass index of 23", 0.3)
    lo, _ = spelled_out.intervals(0.3, ("unmatched_lexical",), RUNTIME_FEATURES)
    assert lo[0] == 0


def test_the_committed_calibration_skips_the_token_model_when_names_have_no_counterpart():
    cal = load_calibration("all-MiniLM-L6-v2")
    pair_facts.cache_clear()
    # Four names without a counterpart: even a perfect alignment of the rest stays under the floor.
    old, new = "Caroline went hiking with Melanie and Jon", "Caroline went swimming with Gina and Tim"
    assert not needs_alignment(old, new, 0.2, cal)
    assert judge_pair(old, new, 0.2, cal).relation == judge_pair(old, new, 0.2, cal, gated=False).relation


def test_spelled_matches_what_the_token_encoder_records():
    stems, names = spelled("Caroline's dog Rex loves long walks")
    assert "rex" in stems and names[stems.index("rex")]
    assert CANDIDATE_FEATURES.bounds.keys() <= CANDIDATE_FEATURES.values.keys()


def test_a_text_the_sentence_model_embedded_is_not_run_again_for_the_judge(monkeypatch):
    from memory_app.embeddings.local import local_embed
    from memory_app.judge.signals import alignment

    encoder = alignment.TokenEncoder()
    monkeypatch.setattr(alignment, "_encoder", encoder)
    texts = ["Caroline went hiking with Melanie last May", "  Jon's dance studio opened in Paris."]
    local_embed(texts)
    fresh = alignment.TokenEncoder()._encode(texts)
    found = encoder.tokens(texts)
    assert encoder.encoded == 0
    for text, tokens in zip(texts, found, strict=True):
        assert tokens.stems == fresh[text].stems
        assert np.allclose(tokens.vectors, fresh[text].vectors, atol=1e-5)


def test_a_text_longer_than_the_token_window_is_encoded_by_the_judge_itself(monkeypatch):
    from memory_app.embeddings.local import local_embed
    from memory_app.judge.signals import alignment

    encoder = alignment.TokenEncoder(max_tokens=8)
    monkeypatch.setattr(alignment, "_encoder", encoder)
    long_text = "Melanie painted a sunset over the lake with her two kids last summer"
    local_embed([long_text])
    encoder.tokens([long_text])
    assert encoder.encoded == 1


def _fresh_pair_caches() -> None:
    # A pair's facts (and the alignment they hold once read) are remembered per process, which
    # would let the second path reuse what the first computed.
    pair_facts.cache_clear()
    judge_features._written_text.cache_clear()


@pytest.mark.parametrize("cal_name", ["committed", "names"])
def test_a_pair_judged_once_gets_the_judgement_of_one_first_run_to_find_its_alignment(cal_name):
    cal = load_calibration("all-MiniLM-L6-v2") if cal_name == "committed" else NAMES_CAL
    for (old, new), distance in itertools.product(PAIRS, (0.1, 0.3, None)):
        _fresh_pair_caches()
        once = judge_pair(old, new, distance, cal)
        _fresh_pair_caches()
        needs_alignment(old, new, distance, cal)
        twice = judge_pair(old, new, distance, cal)
        assert once == twice, (old, new, distance)


def test_the_offline_judge_gives_each_candidate_its_own_judgement_whether_or_not_it_holds_the_texts(
    monkeypatch,
):
    monkeypatch.setattr(alignment, "_encoder", alignment.TokenEncoder())
    cal = load_calibration("all-MiniLM-L6-v2")
    new = JudgeItem(text="Caroline is considering adopting a kid", embedding=None)
    candidates = [JudgeItem(text=old, embedding=None, distance=0.25) for old, _ in PAIRS[:6]]
    alone = [judge_pair(c.text, new.text, 0.25, cal) for c in candidates]
    _fresh_pair_caches()
    cold = OfflineJudge(cal).judge(new, candidates)  # the pairs go through the alignment pre-pass
    _fresh_pair_caches()
    warm = OfflineJudge(cal).judge(new, candidates)  # the encoder holds every text by now
    assert cold == alone and warm == alone


# A new text that refines one candidate (every word of it and more: a rule's sure verdict)
# and only paraphrases the others, which the judge can tell only by reading the word alignment.
REFINED = "Caroline is thinking about adopting a child"
NEW_TEXT = "Caroline is thinking about adopting a child from an agency"
PARAPHRASES = [
    "Caroline is considering adopting a kid",
    "Caroline wants to adopt a kid through an agency",
    "Caroline hopes to welcome an adopted child",
]


def _candidates(texts: list[str], distance: float = 0.2) -> list[JudgeItem]:
    return [JudgeItem(text=text, distance=distance + 0.01 * i) for i, text in enumerate(texts)]


@pytest.mark.parametrize("review_below", [0.5, 0.82, 0.95, 0.995, 1.01])
@pytest.mark.parametrize(
    "texts",
    [
        [REFINED, *PARAPHRASES],
        [*PARAPHRASES, REFINED],
        PARAPHRASES,
        [PAIRS[0][0], PAIRS[1][0], REFINED],
        [old for old, _ in PAIRS],
    ],
)
def test_judging_for_the_decision_gives_the_decision_of_judging_every_candidate(
    texts, review_below, monkeypatch
):
    monkeypatch.setattr(alignment, "_encoder", alignment.TokenEncoder())
    judge = OfflineJudge(load_calibration("all-MiniLM-L6-v2"))
    new, candidates = JudgeItem(text=NEW_TEXT), _candidates(texts)
    _fresh_pair_caches()
    lazy = decide(
        judge.judge_for_decision(new, candidates, review_below=review_below), review_below=review_below
    )
    _fresh_pair_caches()
    full = decide(judge.judge(new, candidates), review_below=review_below)
    assert lazy == full


def test_a_sure_verdict_that_no_waiting_candidate_can_outbid_leaves_the_token_model_unrun(monkeypatch):
    cold = alignment.TokenEncoder()
    monkeypatch.setattr(alignment, "_encoder", cold)
    judge = OfflineJudge(load_calibration("all-MiniLM-L6-v2"))
    _fresh_pair_caches()
    judgements = judge.judge_for_decision(
        JudgeItem(text=NEW_TEXT), _candidates([*PARAPHRASES, REFINED]), review_below=0.82
    )
    assert cold.encoded == 0
    assert judgements[-1].relation == "refine"
    for placeholder in judgements[:-1]:
        assert (placeholder.relation, placeholder.confidence) == ("distinct", DISTINCT_SURE)
        assert placeholder.reason.startswith("not judged")
    assert decide(judgements, review_below=0.82) == Decision("merge", 3, judgements[-1])
    # Without the rule's verdict the paraphrases are read: the model runs once, for all texts.
    _fresh_pair_caches()
    judge.judge_for_decision(JudgeItem(text=NEW_TEXT), _candidates(PARAPHRASES), review_below=0.82)
    assert cold.encoded == len(PARAPHRASES) + 1


@pytest.mark.parametrize("held", ["none", "encoder", "stored rows"])
def test_judging_pairs_in_one_pass_gives_each_pair_the_verdict_judge_gives_it(monkeypatch, held):
    judge = OfflineJudge(load_calibration("all-MiniLM-L6-v2"))
    pairs = [
        (JudgeItem(text=new), JudgeItem(text=old, distance=distance))
        for (old, new), distance in itertools.product(PAIRS + LEXICAL_PAIRS, (0.1, 0.3))
    ]
    expected = []
    for new, old in pairs:
        _fresh_pair_caches()
        expected.append(judge.judge(new, [old])[0])
    texts = [item.text for pair in pairs for item in pair]
    computed = alignment.token_encoder().tokens(texts)
    vectors = dict(zip(texts, computed, strict=True))
    cold = alignment.TokenEncoder()
    monkeypatch.setattr(alignment, "_encoder", cold)
    if held == "encoder":
        cold.tokens(texts)
    _fresh_pair_caches()
    if held == "stored rows":
        with alignment.stored_tokens(lambda wanted: {text: vectors[text] for text in wanted}):
            found = judge.judge_pairs(pairs)
        assert cold.encoded == 0  # every text came from the rows: the model never ran
    else:
        found = judge.judge_pairs(pairs)
    assert found == expected
