"""BM25 when a query word is held by most of the scope: common words stop selecting rows to score.

Scores are checked against BM25 computed here in Python from each row's stored tsvector, so "the
same as before" means the formula itself, not the SQL that happens to compute it."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st

from memory_app.db import ElementFrequencies, element_frequencies, execute, fetch_all
from memory_app.retrieval.bm25 import common_only_bound, common_words, idf, top_is_exact, within_budget
from memory_app.selectors.search import lexical
from memory_app.selectors.search.lexical import bm25_candidates
from memory_app.selectors.search.types import SearchFilters
from tests.factories import MemoryFactory, TenantFactory

FILTERS = SearchFilters(user_id="u1", kind="episodic", namespace="default")
WHOLE_MATCH = "plainto_tsquery"  # only the one-statement plan matches on the parsed query
K1, B, WEIGHT_B = 1.2, 0.75, 0.5


def _scope(tenant, rows: int, seed: int = 5) -> int:  # type: ignore[no-untyped-def]
    """`rows` memories that all say the user likes something, and one about a zeppelin; its id."""
    rng = np.random.default_rng(seed)
    words = ["garden", "tea", "bicycle", "piano", "river", "chess", "bread", "lamp", "kite", "snow"]
    for i in range(rows):
        picked = " and ".join(str(w) for w in rng.choice(words, 3, replace=False))
        MemoryFactory(tenant=tenant, user_id="u1", text=f"User likes {picked} ({i})")
    return MemoryFactory(tenant=tenant, user_id="u1", text="User likes the zeppelin museum").pk


def _reference(tenant, query: str) -> dict[int, float]:  # type: ignore[no-untyped-def]
    """BM25 of every row of the scope, in Python, from the lexemes PostgreSQL stored."""
    terms = set(fetch_all("SELECT tsvector_to_array(to_tsvector('english', %s))", [query])[0][0])
    rows = fetch_all(
        "SELECT m.id, length(m.search_vector), u.lexeme, u.weights FROM memory_app_memory m "
        "CROSS JOIN LATERAL unnest(m.search_vector) u "
        "WHERE m.tenant_id = %s AND m.user_id = 'u1' AND m.status = 'active'",
        [tenant.pk],
    )
    lengths = {r[0]: r[1] for r in rows}
    tf: dict[tuple[int, str], float] = {}
    for memory_id, _, lexeme, weights in rows:
        if lexeme in terms:
            tf[(memory_id, lexeme)] = sum(1.0 if w == "A" else WEIGHT_B for w in weights)
    n, avgdl = len(lengths), max(sum(lengths.values()) / len(lengths), 1.0)
    df = {t: sum(1 for (_, lexeme) in tf if lexeme == t) for t in terms}
    scores: dict[int, float] = {}
    for (memory_id, lexeme), f in tf.items():
        norm = f * (K1 + 1) / (f + K1 * (1 - B + B * lengths[memory_id] / avgdl))
        scores[memory_id] = scores.get(memory_id, 0.0) + idf(n=n, df=df[lexeme]) * norm
    return scores


def _search(tenant, query: str, k: int):  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as queries:
        found = bm25_candidates(
            tenant=tenant, filters=FILTERS, query=query, k=k, k1=K1, b=B, weight_b=WEIGHT_B
        )
    whole = any(WHOLE_MATCH in q["sql"] for q in queries.captured_queries)
    return found, whole


@pytest.fixture
def capped(settings, monkeypatch):  # type: ignore[no-untyped-def]
    """A cap of 5 rows, no exact fallback, and no table statistics (every word is counted)."""
    settings.SEARCH_BM25_TERM_CAP = 5
    settings.SEARCH_EXACT_MAX_ROWS = 0
    monkeypatch.setattr(lexical, "_table_frequencies", lambda: None)
    lexical.forget_scope_stats()


@pytest.mark.django_db
def test_a_common_word_query_over_a_scope_larger_than_the_cap_still_returns_the_rare_term_match_first(
    capped,
):
    tenant = TenantFactory()
    zeppelin = _scope(tenant, 40)
    found, whole = _search(tenant, "what does the user like about the zeppelin?", k=1)
    assert not whole
    assert [c.memory_id for c in found] == [zeppelin]
    reference = _reference(tenant, "what does the user like about the zeppelin?")
    assert found[0].score == pytest.approx(reference[zeppelin], rel=1e-9)


@pytest.mark.django_db
def test_when_every_word_is_common_a_bounded_share_of_the_rows_is_scored_exactly(capped):
    tenant = TenantFactory()
    _scope(tenant, 40)
    found, whole = _search(tenant, "what does the user like", k=10)
    reference = _reference(tenant, "what does the user like")
    assert not whole
    # k of the 41 rows holding the words are scored, each with its exact BM25 score
    assert len(found) == 10
    for c in found:
        assert c.score == pytest.approx(reference[c.memory_id], rel=1e-9)


def _scoring_statements(tenant, query: str, k: int) -> tuple[list, list[str]]:  # type: ignore[no-untyped-def]
    """bm25_candidates' result and the statements that scored rows (those reading `terms`)."""
    with CaptureQueriesContext(connection) as queries:
        found = bm25_candidates(
            tenant=tenant, filters=FILTERS, query=query, k=k, k1=K1, b=B, weight_b=WEIGHT_B
        )
    return found, [q["sql"] for q in queries.captured_queries if "WITH terms AS" in q["sql"]]


@pytest.mark.django_db
def test_rows_a_rare_word_selects_keep_their_exact_scores_and_common_only_rows_fill_the_rest(
    capped, settings
):
    settings.SEARCH_BM25_TERM_CAP = 20  # "piano" (about 12 of 41 rows) stays rare, "user" does not
    tenant = TenantFactory()
    _scope(tenant, 40)
    query = "does the user like the piano or the zeppelin"
    found, statements = _scoring_statements(tenant, query, k=20)
    reference = _reference(tenant, query)
    assert not any(WHOLE_MATCH in sql for sql in statements)
    assert len(statements) == 1  # the rows below the bound are scored in the same statement
    piano_or_zeppelin = {
        r[0]
        for r in fetch_all(
            "SELECT id FROM memory_app_memory WHERE tenant_id = %s AND (text LIKE %s OR text LIKE %s)",
            [tenant.pk, "%piano%", "%zeppelin%"],
        )
    }
    ids = [c.memory_id for c in found]
    assert piano_or_zeppelin <= set(ids)
    assert len(ids) == len(set(ids)) == 20  # the rare rows, then the best of k rows holding only common words
    for c in found:
        assert c.score == pytest.approx(reference[c.memory_id], rel=1e-9)
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)


@pytest.mark.django_db
def test_rows_below_the_bound_are_not_read_when_the_rare_rows_reach_it(capped, settings):
    settings.SEARCH_BM25_TERM_CAP = 20
    tenant = TenantFactory()
    zeppelin = _scope(tenant, 40)
    found, [statement] = _scoring_statements(tenant, "does the user like the zeppelin", k=1)
    assert [c.memory_id for c in found] == [zeppelin]
    # The statement as it ran (its parameters bound in its text): its scan of the rows below the
    # bound is planned but never started.
    plan = [row[0] for row in fetch_all("EXPLAIN (ANALYZE, COSTS OFF) " + statement, [])]
    start = next(i for i, line in enumerate(plan) if line.strip() == "CTE below")
    below = list(itertools.takewhile(lambda line: line.startswith("    "), plan[start + 1 :]))
    scans = [line for line in below if " on memory_app_memory " in line]
    assert scans and all("never executed" in line for line in scans)


@pytest.mark.django_db
def test_a_filtered_scope_up_to_the_exact_size_is_ranked_exactly_when_common_only_rows_could_rank(
    settings, monkeypatch
):
    settings.SEARCH_BM25_TERM_CAP = 5
    settings.SEARCH_EXACT_MAX_ROWS = 30
    monkeypatch.setattr(lexical, "_table_frequencies", lambda: None)
    lexical.forget_scope_stats()
    tenant = TenantFactory()
    _scope(tenant, 40)  # 41 rows in the B-tree prefix, so the word counts run
    hobbies = SearchFilters(user_id="u1", kind="episodic", namespace="default", topics_any=("hobby",))
    for i in range(25):
        MemoryFactory(tenant=tenant, user_id="u1", topics=["hobby"], text=f"User likes hobby number {i}")
    MemoryFactory(tenant=tenant, user_id="u1", topics=["hobby"], text="User likes the zeppelin hobby")
    query = "what does the user like about the zeppelin hobby?"
    with CaptureQueriesContext(connection) as queries:
        found = bm25_candidates(
            tenant=tenant, filters=hobbies, query=query, k=20, k1=K1, b=B, weight_b=WEIGHT_B
        )
    sql = [q["sql"] for q in queries.captured_queries]
    assert any("(SELECT count(*) FROM (SELECT 1 FROM" in q for q in sql)  # the words were counted
    assert any(WHOLE_MATCH in q for q in sql)  # one rare row cannot fill 20 places: exact fallback
    assert len(found) == 20
    scores = [c.score for c in found]
    assert scores == sorted(scores, reverse=True)
    top = found[0].memory_id
    text = fetch_all("SELECT text FROM memory_app_memory WHERE tenant_id = %s AND id = %s", [tenant.pk, top])
    assert "zeppelin" in text[0][0]


@pytest.mark.django_db
def test_small_scopes_give_exactly_todays_scores():
    lexical.forget_scope_stats()
    tenant = TenantFactory()
    _scope(tenant, 60)
    query = "what does the user like about the zeppelin and the garden?"
    found, whole = _search(tenant, query, k=100)
    reference = _reference(tenant, query)
    assert whole  # a scope under the cap never counts words: the one statement scores every row
    assert {c.memory_id for c in found} == set(reference)
    for c in found:
        assert c.score == pytest.approx(reference[c.memory_id], rel=1e-12)


@pytest.mark.django_db
def test_a_large_scope_remembers_which_words_are_common(capped, monkeypatch):
    monkeypatch.setattr(lexical, "STATS_CACHE_MIN_ROWS", 1)
    tenant = TenantFactory()
    zeppelin = _scope(tenant, 20)
    query = "what does the user like about the zeppelin?"
    first, _ = _search(tenant, query, k=1)
    with CaptureQueriesContext(connection) as queries:
        second, _ = _search(tenant, query, k=1)
    counted = [
        q["sql"] for q in queries.captured_queries if "SELECT 1 FROM" in q["sql"] or "avg(length" in q["sql"]
    ]
    assert counted == []  # neither a word count nor the scope statistics ran again
    assert [c.memory_id for c in second] == [c.memory_id for c in first] == [zeppelin]
    assert second[0].score == pytest.approx(first[0].score, rel=1e-12)


def test_a_row_holding_only_common_words_never_reaches_their_bound():
    n, dfs = 1000.0, [900.0, 600.0]
    bound = common_only_bound(n=n, common_dfs=dfs, k1=K1)
    for tf in (0.5, 1.0, 3.0, 50.0, 1e6):
        for dl_ratio in (0.01, 1.0, 20.0):
            norm = tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl_ratio))
            assert sum(idf(n=n, df=df) * norm for df in dfs) < bound


@given(
    st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), max_size=8),
    st.integers(min_value=1, max_value=8),
    st.floats(min_value=0, max_value=100, allow_nan=False),
)
def test_the_top_is_exact_only_with_k_rows_the_last_at_or_above_the_bound(scores, k, bound):
    ranked = sorted(scores, reverse=True)
    expected = len(ranked) >= k and ranked[k - 1] >= bound
    assert top_is_exact(ranked, k=k, bound=bound) is expected


def test_words_counted_past_the_cap_are_common():
    assert common_words({"user": 1001, "zeppelin": 3, "like": 1000, "none": 0}, cap=1000) == {"user"}


def test_idf_is_near_zero_for_a_word_in_every_row_and_large_for_a_rare_one():
    assert idf(n=100_000, df=100_000) == pytest.approx(math.log(1 + 0.5 / 100_000.5))
    assert idf(n=100_000, df=100) > 6.5


@pytest.mark.django_db
def test_a_word_the_table_statistics_put_in_few_rows_is_not_counted_in_the_scope(capped, monkeypatch):
    # The whole table (as ANALYZE saw it): "user" and "like" in every row, any other word in 1 %.
    table = ElementFrequencies(rows=41.0, frequencies={"user": 1.0, "like": 1.0}, least=0.01)
    monkeypatch.setattr(lexical, "_table_frequencies", lambda: table)
    tenant = TenantFactory()
    zeppelin = _scope(tenant, 40)
    with CaptureQueriesContext(connection) as queries:
        found, _ = _search(tenant, "what does the user like about the zeppelin?", k=1)
    probe = "(SELECT count(*) FROM (SELECT 1 FROM"  # one per word counted in the scope
    counts = [q["sql"].count(probe) for q in queries.captured_queries if probe in q["sql"]]
    assert counts == [2]  # "user" and "like" were counted in the scope, "zeppelin" was not
    assert [c.memory_id for c in found] == [zeppelin]


@pytest.mark.django_db
def test_the_planner_statistics_give_each_frequent_words_share_of_the_table():
    tenant = TenantFactory()
    _scope(tenant, 40)
    execute("ANALYZE memory_app_memory")
    frequencies = element_frequencies(table="memory_app_memory", column="search_vector")
    assert frequencies is not None
    assert frequencies.rows_at_most("user") >= 41
    assert frequencies.rows_at_most("zeppelin") < frequencies.rows_at_most("user")


@pytest.mark.django_db
def test_a_word_in_a_rows_context_counts_its_weight_and_repeated_words_count_each_occurrence():
    lexical.forget_scope_stats()
    tenant = TenantFactory()
    MemoryFactory(tenant=tenant, user_id="u1", text="User likes the zeppelin", context="zeppelin museum trip")
    MemoryFactory(tenant=tenant, user_id="u1", text="Zeppelin, zeppelin, zeppelin!", context="")
    MemoryFactory(tenant=tenant, user_id="u1", text="User likes tea", context="the museum cafe")
    query = "zeppelin museum"
    found, whole = _search(tenant, query, k=10)
    reference = _reference(tenant, query)
    assert whole and {c.memory_id for c in found} == set(reference)
    for c in found:
        assert c.score == pytest.approx(reference[c.memory_id], rel=1e-12)


@pytest.mark.django_db
def test_a_rare_word_past_the_row_budget_selects_no_rows_but_still_adds_to_the_scores(capped, settings):
    # "piano" (about 12 of 41 rows) and "zeppelin" (1) are both under the cap of 20; a budget of 5
    # rows lets only the rarest, "zeppelin", select rows. "piano" still counts in its score.
    settings.SEARCH_BM25_TERM_CAP = 20
    settings.SEARCH_BM25_ROW_BUDGET = 5
    tenant = TenantFactory()
    _scope(tenant, 40)
    MemoryFactory(tenant=tenant, user_id="u1", text="User likes the piano in the zeppelin museum")
    query = "does the user like the piano or the zeppelin"
    with CaptureQueriesContext(connection) as queries:
        found, whole = _search(tenant, query, k=3)
    reference = _reference(tenant, query)
    assert not whole
    # Each scoring statement's first tsquery selects its rows: only "zeppelin" ever selects.
    selects = [
        re.search(r"m\.search_vector @@ '([^:]*)'::tsquery", q["sql"])
        for q in queries.captured_queries
        if "AS dl FROM memory_app_memory m" in q["sql"]
    ]
    assert selects and all(m is not None and "piano" not in m.group(1) for m in selects)
    assert any(m is not None and "zeppelin" in m.group(1) for m in selects)
    # The two zeppelin rows come first with their exact scores (piano's df counted, not guessed).
    both = tenant.memories.get(text="User likes the piano in the zeppelin museum").pk
    assert found[0].memory_id == both
    assert found[0].score == pytest.approx(reference[both], rel=1e-9)
    assert found[1].score == pytest.approx(sorted(reference.values(), reverse=True)[1], rel=1e-9)


def test_the_budget_takes_the_rarest_words_while_their_rows_fit_and_always_the_rarest():
    estimates = {"piano": 300.0, "zeppelin": 2.0, "museum": 90.0, "river": 700.0}
    assert within_budget(estimates, budget=400) == ["zeppelin", "museum", "piano"]
    assert within_budget(estimates, budget=100) == ["zeppelin", "museum"]
    assert within_budget({"river": 700.0, "piano": 300.0}, budget=10) == ["piano"]
    assert within_budget({}, budget=10) == []


@given(st.dictionaries(st.text(min_size=1, max_size=4), st.floats(0, 1000), max_size=8), st.floats(0, 3000))
def test_the_budget_is_exceeded_only_by_the_rarest_word_alone(estimates, budget):
    chosen = within_budget(estimates, budget=budget)
    if estimates:
        rarest = min(estimates, key=lambda w: (estimates[w], w))
        assert chosen[0] == rarest
        assert len(chosen) == 1 or sum(estimates[w] for w in chosen) <= budget
        left = [w for w in estimates if w not in chosen]
        assert all(estimates[w] >= estimates[chosen[-1]] for w in left)


@pytest.mark.django_db
def test_a_scope_holding_the_table_takes_a_new_common_words_df_from_its_statistics_without_counting(
    capped, monkeypatch
):
    # ANALYZE saw "user" and "like" in every row and "tea" in 90 % of them (4 x the cap of 5 is 20
    # rows; 90 % of this 41-row scope is 37): after the first query the scope's size is known.
    table = ElementFrequencies(rows=41.0, frequencies={"user": 1.0, "like": 1.0, "tea": 0.9}, least=0.01)
    monkeypatch.setattr(lexical, "_table_frequencies", lambda: table)
    monkeypatch.setattr(lexical, "SMALL_STATS_MIN_ROWS", 10)  # the 41-row scope's statistics are kept
    tenant = TenantFactory()
    zeppelin = _scope(tenant, 40)
    _search(tenant, "what does the user like about the zeppelin?", k=1)
    with CaptureQueriesContext(connection) as queries:
        found, _ = _search(tenant, "does the user like tea in the zeppelin", k=1)
    statements = [q["sql"] for q in queries.captured_queries]
    assert not any("(SELECT count(*) FROM (SELECT 1 FROM" in sql for sql in statements)  # no count
    assert not any("FROM (SELECT m.search_vector FROM" in sql for sql in statements)  # no sample read
    assert [c.memory_id for c in found] == [zeppelin]
    assert lexical._STATS[next(iter(lexical._STATS))].dfs["tea"] == pytest.approx(0.9 * 41)


def _counted_after_a_first_query(table: ElementFrequencies, monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The statements of a second query over a 41-row scope, once its size is remembered."""
    monkeypatch.setattr(lexical, "_table_frequencies", lambda: table)
    monkeypatch.setattr(lexical, "SMALL_STATS_MIN_ROWS", 10)
    tenant = TenantFactory()
    _scope(tenant, 40)
    _search(tenant, "what does the user like about the zeppelin?", k=1)
    with CaptureQueriesContext(connection) as queries:
        _search(tenant, "does the user like tea in the zeppelin", k=1)
    return [q["sql"] for q in queries.captured_queries if "(SELECT count(*) FROM (SELECT 1 FROM" in q["sql"]]


@pytest.mark.django_db
def test_a_word_whose_table_rows_exceed_the_cap_even_if_every_row_outside_the_scope_held_it_is_not_counted(
    capped, monkeypatch
):
    # "tea" in 30 % of the table's 41 rows: 12 rows, fewer than SURELY_COMMON x the cap (20), but the
    # scope is the whole table, so all 12 are in it: more than the cap of 5 without a count.
    table = ElementFrequencies(rows=41.0, frequencies={"user": 1.0, "like": 1.0, "tea": 0.3}, least=0.01)
    assert _counted_after_a_first_query(table, monkeypatch) == []


@pytest.mark.django_db
def test_a_word_the_rows_outside_the_scope_could_all_hold_is_still_counted(capped, monkeypatch):
    # The same share of a table twice the scope's size: its 25 "tea" rows could all lie outside the
    # scope's 41 (82 - 41 = 41 rows outside), so the scope may hold none: counted.
    table = ElementFrequencies(rows=82.0, frequencies={"user": 1.0, "like": 1.0, "tea": 0.3}, least=0.01)
    assert len(_counted_after_a_first_query(table, monkeypatch)) == 1
