"""The offline judge with the real local embedding model on a handful of typical pairs."""

from __future__ import annotations

import pytest

from memory_app.embeddings import embed_texts
from memory_app.judge import JudgeItem, get_judge
from memory_app.judge.calibration.params import clear_calibration_cache
from memory_app.judge.policy import decide
from memory_app.judge.signals.features import cosine_distance


@pytest.fixture
def judge(settings):
    settings.DEDUP_CANDIDATE_RADIUS = None
    settings.DEDUP_REVIEW_BELOW = None
    clear_calibration_cache()
    yield get_judge("offline")
    clear_calibration_cache()


def _items(*texts: str) -> list[JudgeItem]:
    vectors = embed_texts(list(texts), tenant=None)
    return [JudgeItem(text=t, embedding=v) for t, v in zip(texts, vectors, strict=True)]


def _decide(judge, old: str, new: str):
    old_item, new_item = _items(old, new)
    judgements = judge.judge(new_item, [old_item])
    return decide(judgements, review_below=judge.calibration.review_below)


def test_a_changed_number_is_never_merged_and_supersedes(judge):
    decision = _decide(judge, "User's daily step goal is 10,000", "User's daily step goal is 12,000")
    assert decision.judgement.relation == "update"
    assert decision.action == "supersede"


def test_a_fact_about_another_person_is_not_merged(judge):
    decision = _decide(judge, "User plays the piano", "User's son plays the piano")
    assert decision.action in ("store", "review")


def test_a_refinement_merges_into_the_richer_text(judge):
    decision = _decide(judge, "User drinks green tea", "User drinks green tea with honey every morning")
    assert decision.judgement.relation == "refine"
    assert decision.action == "merge"


def test_a_paraphrase_is_merged_or_at_least_reviewed(judge):
    decision = _decide(judge, "User is allergic to penicillin", "The user has a penicillin allergy")
    assert decision.judgement.relation == "duplicate"
    assert decision.action in ("merge", "review")


def test_the_same_text_is_a_certain_duplicate(judge):
    decision = _decide(judge, "User lives in Lisbon.", "user lives in lisbon")
    assert decision.action == "merge"


def test_without_embeddings_the_judge_never_merges_a_paraphrase(judge):
    new = JudgeItem(text="The user has a penicillin allergy")
    judgements = judge.judge(new, [JudgeItem(text="User is allergic to penicillin")])
    assert decide(judgements, review_below=judge.calibration.review_below).action != "merge"


def test_one_judgement_per_candidate_in_order(judge):
    new, *candidates = _items(
        "User's daily step goal is 12,000", "User's daily step goal is 10,000", "User collects stamps"
    )
    judgements = judge.judge(new, candidates)
    assert len(judgements) == 2
    assert judgements[0].relation == "update"
    assert all(j.judge == "offline" for j in judgements)


@pytest.mark.django_db
def test_a_restatement_with_only_an_article_added_is_merged(judge):
    assert (
        _decide(judge, "User prefers morning workouts", "The user prefers morning workouts.").action
        == "merge"
    )


@pytest.mark.django_db
def test_the_same_frame_with_another_object_is_never_merged(judge):
    decision = _decide(judge, "User is allergic to peanuts", "User is allergic to tree nuts")
    assert decision.action in ("review", "store")
    decision = _decide(
        judge, "User deploys their side projects on Heroku", "User deploys their side projects on Fly.io"
    )
    assert decision.action != "merge"


def test_a_distance_the_caller_already_has_is_used_instead_of_the_vectors(judge):
    """The store's candidate query returns pgvector's distance and no vectors: the judge must reach
    the same verdict from it as from the two embeddings."""
    old, new = _items("User is allergic to penicillin", "The user has a penicillin allergy")
    distance = cosine_distance(new.embedding, old.embedding)
    from_vectors = judge.judge(new, [old])
    from_distance = judge.judge(new, [JudgeItem(text=old.text, distance=distance)])
    assert from_distance == from_vectors
    # and the distance is really read: without it (and without vectors) the pair is "unknown"
    assert judge.judge(new, [JudgeItem(text=old.text)]) != from_vectors


def test_a_phrase_restated_word_for_word_inside_a_shared_frame_merges(judge):
    # "grew up" / "spent her childhood": every word of the exchanged phrase has a counterpart.
    decision = _decide(judge, "Lena grew up in Porto", "Lena spent her childhood in Porto")
    assert decision.action == "merge"
    decision = _decide(judge, "Tim is learning to play the violin", "Tim is practising the violin")
    assert decision.action == "merge"


def test_another_thing_in_a_shared_frame_is_at_most_reviewed(judge):
    # The frame veto stays whenever the exchanged phrase leaves a word without a counterpart, even
    # one the model alone would merge on.
    for old, new in [
        ("Omar is allergic to peanuts", "Omar is allergic to tree nuts"),
        ("Lena grew up in Porto", "Lena went to university in Porto"),
        ("User drinks green tea every morning", "User drinks black coffee every morning"),
    ]:
        decision = _decide(judge, old, new)
        assert decision.action in ("review", "store"), (old, new)
        # A store decision carries no judgement (a sure distinct: both kept, nothing to review).
        assert decision.action == "store" or "frame" in decision.judgement.reason


def test_a_pronoun_contraction_is_not_a_word_left_unrestated(judge):
    decision = _decide(
        judge, "User is studying for the AWS exam", "They're studying for the Amazon Web Services exam"
    )
    assert decision.action == "merge"
