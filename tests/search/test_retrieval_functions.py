"""Pure ranking functions on arrays: no database."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_app.embeddings.tokens import count_tokens
from memory_app.judge.base import JudgeItem, Judgement
from memory_app.judge.offline import OfflineJudge
from memory_app.retrieval import dedup as dedup_module
from memory_app.retrieval.clustering import (
    NOISE,
    cluster_stats,
    cosine_distances,
    dbscan,
    near_duplicate_groups,
)
from memory_app.retrieval.decay import ace_factors, decay_factors
from memory_app.retrieval.dedup import clear_verdict_cache, dedup_groups
from memory_app.retrieval.fusion import cosine_to, minmax, rrf_scores
from memory_app.retrieval.mmr import cosine_similarities, jaccard_similarities, mmr_order
from memory_app.retrieval.packing import pack
from memory_app.retrieval.pipeline import run_pipeline
from tests.factories.store import FixedJudge


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_rrf_rewards_items_found_by_both_lists():
    fused = rrf_scores([["a", "b", "c"], ["c", "d"]], k=60)
    assert max(fused, key=fused.get) == "c"
    assert fused["a"] == pytest.approx(1 / 61)


def test_rrf_weights_tilt_towards_one_list():
    fused = rrf_scores([["a"], ["b"]], k=10, weights=[0.2, 0.8])
    assert fused["b"] > fused["a"]


def test_minmax_maps_to_zero_one_and_a_constant_list_to_ones():
    assert list(minmax(np.array([2.0, 4.0, 3.0]))) == [0.0, 1.0, 0.5]
    assert list(minmax(np.array([3.0, 3.0]))) == [1.0, 1.0]


def test_decay_halves_the_score_after_one_half_life():
    factors = decay_factors(np.array([0.0, 10.0, 20.0]), half_life_seconds=10.0)
    assert factors == pytest.approx([1.0, 0.5, 0.25])


def test_decay_respects_its_floor_and_can_be_disabled():
    assert decay_factors(np.array([1e9]), half_life_seconds=10.0, floor=0.5)[0] == pytest.approx(0.5)
    assert decay_factors(np.array([1e9]), half_life_seconds=0.0)[0] == 1.0
    assert decay_factors(np.array([-50.0]), half_life_seconds=10.0)[0] == 1.0


def test_ace_rewards_confidence_and_helpful_feedback_and_punishes_harmful():
    neutral, confident, helped, harmed = ace_factors(
        np.array([0.5, 0.9, 0.5, 0.5]), np.array([0, 0, 5, 0]), np.array([0, 0, 0, 5])
    )
    assert neutral == pytest.approx(1.0)
    assert confident > neutral and helped > neutral and harmed < neutral


def test_dbscan_finds_two_dense_groups_and_leaves_the_outlier_as_noise():
    points = np.array(
        [unit(1, 0, 0), unit(1, 0.05, 0), unit(0, 1, 0), unit(0.05, 1, 0), unit(0, 0, 1)], dtype=np.float32
    )
    labels = dbscan(cosine_distances(points), epsilon=0.15, min_points=2)
    assert labels[0] == labels[1] != labels[2] == labels[3]
    assert labels[4] == NOISE
    stats = cluster_stats(labels)
    assert stats.message() == "formed 3 clusters (2 real, 1 noise) from 5 results"


def test_dbscan_with_high_min_points_calls_everything_noise():
    points = np.array([unit(1, 0), unit(1, 0.01)], dtype=np.float32)
    assert list(dbscan(cosine_distances(points), epsilon=0.15, min_points=3)) == [NOISE, NOISE]


def test_near_duplicate_groups_do_not_chain_through_a_middle_item():
    a, b, c = unit(1, 0), unit(1, 0.45), unit(1, 1.0)
    distances = cosine_distances(np.array([a, b, c], dtype=np.float32))
    assert distances[0, 1] <= 0.1 and distances[1, 2] <= 0.1 and distances[0, 2] > 0.1
    assert near_duplicate_groups(distances, threshold=0.1) == [[0, 1], [2]]


def test_mmr_prefers_a_different_item_over_a_near_copy_of_the_first():
    embeddings = np.array([unit(1, 0), unit(1, 0.01), unit(0, 1)], dtype=np.float32)
    relevance = np.array([1.0, 0.95, 0.8])
    assert mmr_order(relevance, cosine_similarities(embeddings), lambda_=0.7) == [0, 2, 1]
    assert mmr_order(relevance, cosine_similarities(embeddings), lambda_=1.0) == [0, 1, 2]


def test_mmr_falls_back_to_word_jaccard_without_embeddings():
    texts = ["alice likes green tea", "alice likes green tea a lot", "bob runs marathons"]
    similarities = jaccard_similarities(texts)
    assert similarities[0, 1] > 0.5 and similarities[0, 2] == 0.0
    assert mmr_order(np.array([1.0, 0.9, 0.7]), similarities, lambda_=0.7, k=2) == [0, 2]


@pytest.mark.parametrize("budget", [0, 1, 5, 12, 40, 100, 333])
def test_packing_never_exceeds_the_budget(budget: int):
    rng = np.random.default_rng(budget)
    words = ["memory", "agent", "🙂", "naïve", "2024-05-01", "über", "tokens", "x" * 30]
    lines = [" ".join(rng.choice(words, size=rng.integers(1, 12))) for _ in range(60)]
    packed = pack(lines, budget=budget, count=count_tokens, header="Relevant memories:")
    assert packed.tokens <= budget
    assert packed.tokens == (count_tokens(packed.text) if packed.text else 0)
    assert packed.indices == sorted(packed.indices)


def test_packing_skips_a_long_line_but_keeps_later_short_ones():
    lines = ["short one", "a much longer line " * 20, "short two"]
    packed = pack(lines, budget=12, count=count_tokens)
    assert packed.indices == [0, 2]


def test_load_time_dedup_collapses_a_refined_text_under_its_refinement_and_keeps_an_update_apart():
    texts = [
        "User prefers green tea in the morning",
        "User prefers green tea",
        "User's BMI goal is 23",
        "User's BMI goal is 24",
    ]
    embeddings = np.array([unit(1, 0, 0), unit(1, 0.1, 0), unit(0, 1, 0), unit(0, 1, 0.1)], dtype=np.float32)
    groups = dedup_groups(texts, embeddings, threshold=0.4, judge=OfflineJudge(), min_confidence=0.9)
    assert [g.members for g in groups] == [[0, 1], [2], [3]]
    assert groups[0].text == "User prefers green tea in the morning"


def test_load_time_dedup_never_shows_the_best_match_under_a_richer_members_text():
    texts = ["User prefers green tea", "User prefers green tea in the morning"]
    embeddings = np.array([unit(1, 0, 0), unit(1, 0.1, 0)], dtype=np.float32)
    groups = dedup_groups(texts, embeddings, threshold=0.4, judge=OfflineJudge(), min_confidence=0.9)
    assert [(g.members, g.text) for g in groups] == [([0], texts[0]), ([1], texts[1])]


def test_a_collapsed_group_shows_its_best_ranked_members_text_and_keeps_names_apart():
    texts = [
        "Gina is afraid of heights",
        "Gina likes to sit by the window when flying",
        "Gina's friend Tom is afraid of heights",
    ]
    embeddings = np.array([unit(1, 0, 0), unit(1, 0.1, 0), unit(1, 0, 0.1)], dtype=np.float32)
    groups = dedup_groups(
        texts, embeddings, threshold=0.4, judge=FixedJudge("duplicate", 1.0), min_confidence=0.9
    )
    # Even a judge that calls everything a duplicate cannot put another member's text in its place,
    # nor hide a word or a name the shown text does not state.
    assert [(g.members, g.text) for g in groups] == [([0], texts[0]), ([1], texts[1]), ([2], texts[2])]


def test_pipeline_returns_at_most_limit_entries_with_cluster_labels():
    embeddings = np.array([unit(1, 0, 0), unit(1, 0.05, 0), unit(0, 1, 0), unit(0, 0, 1)], dtype=np.float32)
    outcome = run_pipeline(
        texts=["a one", "a two", "b", "c"],
        embeddings=embeddings,
        scores=np.array([4.0, 3.0, 2.0, 1.0]),
        limit=3,
        deduplicate=False,
        dedup_threshold=0.4,
        judge=None,
        clustering=True,
        epsilon=0.15,
        min_points=2,
        mmr=True,
        mmr_lambda=0.7,
    )
    assert len(outcome.entries) == 3
    assert outcome.entries[0].members == [0] and outcome.entries[0].cluster == 0
    assert outcome.stats is not None and outcome.stats.real == 1


class _ParityJudge:
    """Duplicate or distinct by the parity of the two texts' lengths: arbitrary but deterministic."""

    name = "parity"

    def __init__(self) -> None:
        self.pairs = 0

    def judge(self, new: JudgeItem, candidates: list[JudgeItem]) -> list[Judgement]:
        self.pairs += len(candidates)
        return [
            Judgement("duplicate" if (len(new.text) + len(c.text)) % 2 == 0 else "distinct", 1.0, judge="x")
            for c in candidates
        ]


@pytest.mark.parametrize("shown", [1, 3, 10, 25])
def test_collapse_bounded_to_the_shown_groups_gives_them_exactly_and_judges_less(shown: int):
    rng = np.random.default_rng(shown)
    centres = rng.standard_normal((8, 16))
    embeddings = np.stack([centres[i % 8] + 0.2 * rng.standard_normal(16) for i in range(60)])
    embeddings = (embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)).astype(np.float32)
    syllables = ["ka", "lo", "mi", "ren", "tu", "sa"]
    texts = ["user likes " + " ".join(rng.choice(syllables, size=rng.integers(2, 6))) for _ in range(60)]
    full_judge, bounded_judge = _ParityJudge(), _ParityJudge()
    clear_verdict_cache()
    full = dedup_groups(texts, embeddings, threshold=0.6, judge=full_judge, min_confidence=0.9)
    clear_verdict_cache()
    bounded = dedup_groups(
        texts, embeddings, threshold=0.6, judge=bounded_judge, min_confidence=0.9, shown=shown
    )
    assert [(g.members, g.text) for g in bounded[:shown]] == [(g.members, g.text) for g in full[:shown]]
    assert sorted(i for g in bounded for i in g.members) == list(range(60))  # every row still listed
    assert bounded_judge.pairs <= full_judge.pairs
    if shown < 10:
        assert bounded_judge.pairs < full_judge.pairs


@pytest.mark.parametrize("shown", [1, 2, 3])
def test_collapse_bounded_to_the_shown_groups_fact_checks_only_the_members_that_can_matter(
    shown: int, monkeypatch: pytest.MonkeyPatch
):
    rng = np.random.default_rng(shown)
    centres = rng.standard_normal((6, 16))
    embeddings = np.stack([centres[i % 6] + 0.2 * rng.standard_normal(16) for i in range(60)])
    embeddings = (embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)).astype(np.float32)
    names = ["Kalomi", "Renatu", "Sadazu", "Homivo"]  # a member named otherwise can never join
    texts = [f"{rng.choice(names)} mentioned that the user likes tea number {i % 6}." for i in range(60)]
    checked: list[tuple[str, str]] = []
    real = dedup_module.loses_facts

    def counted(kept: str, other: str) -> bool:
        checked.append((kept, other))
        return real(kept, other)

    monkeypatch.setattr(dedup_module, "loses_facts", counted)
    clear_verdict_cache()
    full = dedup_groups(texts, embeddings, threshold=0.6, judge=_ParityJudge(), min_confidence=0.9)
    every_pair = len(checked)
    clear_verdict_cache()
    checked.clear()
    bounded = dedup_groups(
        texts, embeddings, threshold=0.6, judge=_ParityJudge(), min_confidence=0.9, shown=shown
    )
    assert [(g.members, g.text) for g in bounded[:shown]] == [(g.members, g.text) for g in full[:shown]]
    assert len(checked) < every_pair


def _leader_groups_by_definition(distances: np.ndarray, threshold: float) -> list[list[int]]:
    """The rule as written: each item joins the first earlier leader within reach."""
    leaders: list[int] = []
    groups: dict[int, list[int]] = {}
    for item in range(distances.shape[0]):
        home = next((leader for leader in leaders if distances[item, leader] <= threshold), None)
        if home is None:
            leaders.append(item)
            groups[item] = [item]
        else:
            groups[home].append(item)
    return [groups[leader] for leader in leaders]


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=40),
    width=st.integers(min_value=2, max_value=8),
    seed=st.integers(min_value=0, max_value=2**31),
    threshold=st.floats(min_value=0.0, max_value=2.0),
)
def test_near_duplicate_groups_keep_the_leader_rule(n: int, width: int, seed: int, threshold: float) -> None:
    points = np.random.default_rng(seed).standard_normal((n, width)).astype(np.float32)
    distances = cosine_distances(points) if n else np.zeros((0, 0), dtype=np.float32)
    assert near_duplicate_groups(distances, threshold=threshold) == _leader_groups_by_definition(
        distances, threshold
    )


def test_a_search_reads_three_times_a_small_limit_and_at_most_the_margin_more_for_a_large_one() -> None:
    from memory_app.selectors.search.query import fetch_size

    assert fetch_size(10, deduplicate=True, margin=60) == 30
    assert fetch_size(30, deduplicate=True, margin=60) == 90
    assert fetch_size(60, deduplicate=True, margin=60) == 120
    assert fetch_size(60, deduplicate=False, margin=60) == 60
    assert fetch_size(60, deduplicate=True, margin=0) == 60


def test_cosine_to_the_query_matches_the_pairwise_cosine_and_gives_a_zero_vector_zero():
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(5, 16))
    rows[3] = 0.0
    query = rng.normal(size=16)
    expected = cosine_similarities(np.vstack([query, rows]))[0, 1:]
    np.testing.assert_allclose(cosine_to(query, rows), expected, atol=1e-6)
    assert cosine_to(query, rows)[3] == 0.0
    assert cosine_to(np.zeros(16), rows).tolist() == [0.0] * 5
