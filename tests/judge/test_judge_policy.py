"""decide(): from judgements to one action; errors fall toward review, never toward merge."""

from __future__ import annotations

from memory_app.judge.base import Judgement
from memory_app.judge.policy import decide


def test_confident_duplicate_merges():
    decision = decide([Judgement("duplicate", 0.95)], review_below=0.9)
    assert (decision.action, decision.index) == ("merge", 0)


def test_confident_refinement_merges():
    assert decide([Judgement("refine", 0.97)], review_below=0.9).action == "merge"


def test_confident_update_supersedes():
    assert decide([Judgement("update", 0.97)], review_below=0.9).action == "supersede"


def test_unsure_duplicate_goes_to_review_not_merge():
    decision = decide([Judgement("duplicate", 0.6)], review_below=0.9)
    assert (decision.action, decision.index) == ("review", 0)


def test_distinct_is_stored():
    decision = decide([Judgement("distinct", 0.9)], review_below=0.9)
    assert decision.action == "store"
    assert decision.index is None and decision.judgement is None


def test_an_unsure_distinct_close_call_is_reviewed():
    assert decide([Judgement("distinct", 0.3)], review_below=0.9).action == "review"


def test_no_candidates_means_store():
    assert decide([], review_below=0.9).action == "store"


def test_the_most_confident_actionable_candidate_wins():
    judgements = [
        Judgement("distinct", 0.99),
        Judgement("duplicate", 0.92),
        Judgement("update", 0.97),
        Judgement("duplicate", 0.5),
    ]
    decision = decide(judgements, review_below=0.9)
    assert (decision.action, decision.index) == ("supersede", 2)
    assert decision.judgement is judgements[2]


def test_an_actionable_candidate_beats_a_doubtful_one():
    judgements = [Judgement("duplicate", 0.85), Judgement("duplicate", 0.93)]
    assert decide(judgements, review_below=0.9).index == 1


def test_ties_go_to_the_nearer_candidate():
    judgements = [Judgement("duplicate", 0.95), Judgement("duplicate", 0.95)]
    assert decide(judgements, review_below=0.9).index == 0


def test_an_update_needs_supersede_confidence_even_under_a_low_merge_threshold():
    assert decide([Judgement("update", 0.8)], review_below=0.7).action == "review"
    assert decide([Judgement("duplicate", 0.8)], review_below=0.7).action == "merge"
