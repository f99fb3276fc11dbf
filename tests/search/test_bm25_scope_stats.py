"""BM25's scope statistics: remembered for a large scope, read every time for a small one."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory_app.selectors.search import lexical
from memory_app.selectors.search.lexical import bm25_candidates
from memory_app.selectors.search.types import SearchFilters
from tests.factories import MemoryFactory, TenantFactory

pytestmark = pytest.mark.django_db

FILTERS = SearchFilters(user_id="u1", kind="episodic", namespace="default")
AGGREGATE = "avg(length(m.search_vector))"


def _scope(tenant):  # type: ignore[no-untyped-def]
    texts = ["the garden needs water", "a red bicycle in the garden", "water the tomatoes daily", "tea"]
    for text in texts:
        MemoryFactory(tenant=tenant, user_id="u1", text=text)


def _ranked(tenant):  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as queries:
        found = bm25_candidates(tenant=tenant, filters=FILTERS, query="garden water", k=10)
    aggregated = any(AGGREGATE in q["sql"] for q in queries.captured_queries)
    return [(c.memory_id, round(c.score, 6)) for c in found], aggregated


def test_a_large_scope_reads_its_statistics_once_and_ranks_the_same_with_them(monkeypatch):
    monkeypatch.setattr(lexical, "STATS_CACHE_MIN_ROWS", 1)
    lexical.forget_scope_stats()
    tenant = TenantFactory()
    _scope(tenant)
    first, first_aggregated = _ranked(tenant)
    second, second_aggregated = _ranked(tenant)
    assert first_aggregated and not second_aggregated
    assert second == first and len(first) == 3


def test_a_small_scope_is_counted_at_every_query(monkeypatch):
    lexical.forget_scope_stats()
    tenant = TenantFactory()
    _scope(tenant)
    first, first_aggregated = _ranked(tenant)
    MemoryFactory(tenant=tenant, user_id="u1", text="the garden shed is blue")
    second, second_aggregated = _ranked(tenant)
    assert first_aggregated and second_aggregated
    assert len(second) == len(first) + 1


@pytest.mark.parametrize(
    ("min_rows", "ttl"), [("STATS_CACHE_MIN_ROWS", "STATS_TTL"), ("SMALL_STATS_MIN_ROWS", "SMALL_STATS_TTL")]
)
def test_remembered_statistics_expire(monkeypatch, min_rows, ttl):
    monkeypatch.setattr(lexical, min_rows, 1)
    monkeypatch.setattr(lexical, ttl, -1.0)
    lexical.forget_scope_stats()
    tenant = TenantFactory()
    _scope(tenant)
    _ranked(tenant)
    assert _ranked(tenant)[1]


def test_a_mid_size_scope_remembers_its_statistics_and_still_finds_a_new_row(monkeypatch):
    monkeypatch.setattr(lexical, "SMALL_STATS_MIN_ROWS", 4)
    lexical.forget_scope_stats()
    tenant = TenantFactory()
    _scope(tenant)
    first, first_aggregated = _ranked(tenant)
    MemoryFactory(tenant=tenant, user_id="u1", text="the garden shed is blue")
    second, second_aggregated = _ranked(tenant)
    assert first_aggregated and not second_aggregated
    # The matched rows are read live: the new row is scored at once.
    assert len(second) == len(first) + 1


def test_a_scope_larger_than_the_sample_estimates_common_words_and_still_ranks_the_rare_word_first(
    monkeypatch, settings
):
    settings.SEARCH_BM25_TERM_CAP = 5
    settings.SEARCH_EXACT_MAX_ROWS = 0
    monkeypatch.setattr(lexical, "_table_frequencies", lambda: None)
    monkeypatch.setattr(lexical, "SCOPE_SAMPLE_ROWS", 10)
    monkeypatch.setattr(lexical, "STATS_CACHE_MIN_ROWS", 1)
    lexical.forget_scope_stats()
    tenant = TenantFactory()
    for i in range(40):
        MemoryFactory(tenant=tenant, user_id="u1", text=f"the user waters the garden, day {i}")
    zeppelin = MemoryFactory(tenant=tenant, user_id="u1", text="the user rode a zeppelin").pk
    found = bm25_candidates(tenant=tenant, filters=FILTERS, query="did the user ride a zeppelin", k=5)
    assert found[0].memory_id == zeppelin
    (stats,) = lexical._STATS.values()
    assert stats.n == 41  # counted, not sampled
    # "user" is in every row: its df is estimated from the 10 sampled rows, never below cap + 1
    assert stats.dfs["user"] == pytest.approx(41.0)
