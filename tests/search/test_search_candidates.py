"""Candidate generation: every filter, both generators, tenant and embedding-model isolation."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from memory_app.embeddings import embedding_model_name
from memory_app.selectors.search.candidates import fulltext_candidates, indexed_scopes, vector_candidates
from memory_app.selectors.search.types import SearchFilters
from tests.factories import MemoryFactory, unit_vector

pytestmark = pytest.mark.django_db


def _near(base: np.ndarray, seed: int, noise: float) -> np.ndarray:
    v = base + noise * unit_vector(seed)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _ids(candidates) -> list[int]:  # type: ignore[no-untyped-def]
    return [c.memory_id for c in candidates]


def test_vector_candidates_return_the_exact_nearest_rows_in_distance_order(tenant_a):
    query = unit_vector(1000)
    rows = [
        MemoryFactory(tenant=tenant_a.tenant, embedding=_near(query, i, 0.2 + i * 0.1)) for i in range(12)
    ]
    found = vector_candidates(tenant=tenant_a.tenant, filters=SearchFilters(), query_embedding=query, k=5)
    assert _ids(found) == [m.pk for m in rows[:5]]
    distances = [c.score for c in found]
    assert distances == sorted(distances)
    expected = 1 - float(np.dot(rows[0].embedding, query))
    assert distances[0] == pytest.approx(expected, abs=1e-5)
    assert {c.plan for c in found} == {"exact"}


def test_vector_candidates_never_cross_tenants(tenant_a, tenant_b):
    query = unit_vector(1)
    MemoryFactory(tenant=tenant_a.tenant, embedding=query)
    theirs = MemoryFactory(tenant=tenant_b.tenant, embedding=query)
    found = vector_candidates(tenant=tenant_b.tenant, filters=SearchFilters(), query_embedding=query, k=10)
    assert _ids(found) == [theirs.pk]


def test_vectors_of_another_embedding_model_are_never_returned(tenant_a):
    query = unit_vector(1)
    MemoryFactory(tenant=tenant_a.tenant, embedding=query, embedding_model="text-embedding-3-small")
    ours = MemoryFactory(tenant=tenant_a.tenant, embedding=_near(query, 2, 0.5))
    MemoryFactory(tenant=tenant_a.tenant, embedding=None, embedding_model="")
    found = vector_candidates(tenant=tenant_a.tenant, filters=SearchFilters(), query_embedding=query, k=10)
    assert _ids(found) == [ours.pk]


def test_an_empty_scope_returns_no_candidates(tenant_a):
    MemoryFactory(tenant=tenant_a.tenant, user_id="someone")
    filters = SearchFilters(user_id="nobody")
    assert (
        vector_candidates(tenant=tenant_a.tenant, filters=filters, query_embedding=unit_vector(1), k=10) == []
    )
    assert fulltext_candidates(tenant=tenant_a.tenant, filters=filters, query="memory", k=10) == []


def test_an_empty_scope_is_counted_and_not_searched(tenant_a, django_assert_num_queries):
    from memory_app.selectors.search.lexical import bm25_candidates

    MemoryFactory(tenant=tenant_a.tenant, user_id="someone", text="memory of someone")
    filters = SearchFilters(user_id="nobody")
    indexed_scopes(tenant=tenant_a.tenant)  # read once, then remembered for a while
    embedding_model_name(tenant_a.tenant)  # the live model too (the query's embedding read it)
    with django_assert_num_queries(1):  # the scope's count, no candidate statement
        found = vector_candidates(
            tenant=tenant_a.tenant, filters=filters, query_embedding=unit_vector(1), k=10
        )
    assert found == []
    with django_assert_num_queries(1):
        assert bm25_candidates(tenant=tenant_a.tenant, filters=filters, query="memory", k=10) == []
    someone = SearchFilters(user_id="someone")
    assert bm25_candidates(tenant=tenant_a.tenant, filters=someone, query="memory", k=10) != []


def test_a_non_positive_k_returns_nothing(tenant_a):
    MemoryFactory(tenant=tenant_a.tenant)
    assert (
        vector_candidates(
            tenant=tenant_a.tenant, filters=SearchFilters(), query_embedding=unit_vector(1), k=0
        )
        == []
    )


def test_a_query_embedding_with_nan_is_refused(tenant_a):
    bad = np.full(384, np.nan, dtype=np.float32)
    with pytest.raises(ValueError):
        vector_candidates(tenant=tenant_a.tenant, filters=SearchFilters(), query_embedding=bad, k=3)


NOW = timezone.now()

# Each case: (attributes of the row that must match, attributes of the row that must not, filters).
FILTER_CASES = {
    "user_id": ({"user_id": "u1"}, {"user_id": "u2"}, SearchFilters(user_id="u1")),
    "agent_id": ({"agent_id": "a1"}, {"agent_id": "a2"}, SearchFilters(agent_id="a1")),
    "namespace": ({"namespace": "n1"}, {"namespace": "n2"}, SearchFilters(namespace="n1")),
    "session_id": ({"session_id": "s1"}, {"session_id": "s2"}, SearchFilters(session_id="s1")),
    "kind": ({"kind": "semantic"}, {"kind": "episodic"}, SearchFilters(kind="semantic")),
    "topics_any": (
        {"topics": ["food", "x"]},
        {"topics": ["sport"]},
        SearchFilters(topics_any=("food", "travel")),
    ),
    "topics_all": (
        {"topics": ["food", "travel", "x"]},
        {"topics": ["food"]},
        SearchFilters(topics_all=("food", "travel")),
    ),
    "entities": ({"entities": ["Alice"]}, {"entities": ["Carol"]}, SearchFilters(entities=("Alice", "Bob"))),
    "created_after": (
        {"created_at": NOW},
        {"created_at": NOW - timedelta(days=10)},
        SearchFilters(created_after=NOW - timedelta(days=1)),
    ),
    "created_before": (
        {"created_at": NOW - timedelta(days=10)},
        {"created_at": NOW},
        SearchFilters(created_before=NOW - timedelta(days=1)),
    ),
    "event_after": (
        {"event_date": NOW},
        {"event_date": NOW - timedelta(days=10)},
        SearchFilters(event_after=NOW - timedelta(days=1)),
    ),
    "event_before": (
        {"event_date": NOW - timedelta(days=10)},
        {"event_date": None},
        SearchFilters(event_before=NOW - timedelta(days=1)),
    ),
    "min_confidence": ({"confidence": 0.9}, {"confidence": 0.3}, SearchFilters(min_confidence=0.8)),
    "status": ({"status": "active"}, {"status": "superseded"}, SearchFilters()),
    "deleted_even_with_superseded": (
        {"status": "superseded"},
        {"status": "deleted"},
        SearchFilters(include_superseded=True),
    ),
    "expired": (
        {"expires_at": NOW + timedelta(days=1)},
        {"expires_at": NOW - timedelta(days=1)},
        SearchFilters(),
    ),
}


@pytest.mark.parametrize("case", sorted(FILTER_CASES))
def test_each_filter_keeps_matching_rows_and_drops_the_others(tenant_a, case):
    keep_attrs, drop_attrs, filters = FILTER_CASES[case]
    query = unit_vector(7)
    keep = MemoryFactory(
        tenant=tenant_a.tenant, text="the blue lagoon trip", embedding=_near(query, 8, 0.6), **keep_attrs
    )
    MemoryFactory(tenant=tenant_a.tenant, text="the blue lagoon again", embedding=query, **drop_attrs)
    found = vector_candidates(tenant=tenant_a.tenant, filters=filters, query_embedding=query, k=10)
    assert _ids(found) == [keep.pk]
    text_found = fulltext_candidates(tenant=tenant_a.tenant, filters=filters, query="blue lagoon", k=10)
    assert _ids(text_found) == [keep.pk]


def test_superseded_rows_are_returned_when_asked(tenant_a):
    query = unit_vector(3)
    old = MemoryFactory(tenant=tenant_a.tenant, embedding=query, status="superseded")
    new = MemoryFactory(tenant=tenant_a.tenant, embedding=_near(query, 4, 0.5))
    found = vector_candidates(
        tenant=tenant_a.tenant, filters=SearchFilters(include_superseded=True), query_embedding=query, k=10
    )
    assert _ids(found) == [old.pk, new.pk]


def test_pinned_rows_outlive_their_expiry(tenant_a):
    pinned = MemoryFactory(tenant=tenant_a.tenant, pinned=True, expires_at=NOW - timedelta(days=1))
    found = vector_candidates(
        tenant=tenant_a.tenant, filters=SearchFilters(), query_embedding=unit_vector(1), k=5
    )
    assert _ids(found) == [pinned.pk]


def test_fulltext_ranks_rows_matching_more_terms_first_when_any_term_may_match(tenant_a):
    t = tenant_a.tenant
    both = MemoryFactory(tenant=t, text="Caroline went hiking in the mountains")
    one = MemoryFactory(tenant=t, text="Caroline painted a sunset")
    MemoryFactory(tenant=t, text="Melanie baked bread")
    found = fulltext_candidates(
        tenant=t, filters=SearchFilters(), query="Where did Caroline go hiking?", k=10
    )
    assert _ids(found) == [both.pk, one.pk]
    assert found[0].score > found[1].score > 0
    assert {c.plan for c in found} == {"fulltext"}


def test_fulltext_with_match_all_needs_every_term(tenant_a):
    t = tenant_a.tenant
    both = MemoryFactory(tenant=t, text="Caroline went hiking in the mountains")
    MemoryFactory(tenant=t, text="Caroline painted a sunset")
    found = fulltext_candidates(tenant=t, filters=SearchFilters(), query="Caroline hiking", k=10, match="all")
    assert _ids(found) == [both.pk]


def test_fulltext_matches_the_context_column_too(tenant_a):
    row = MemoryFactory(tenant=tenant_a.tenant, text="we talked", context="about the lighthouse")
    found = fulltext_candidates(tenant=tenant_a.tenant, filters=SearchFilters(), query="lighthouse", k=5)
    assert _ids(found) == [row.pk]


@pytest.mark.parametrize("query", ["the and of", "", "   ", "?!"])
def test_a_query_without_lexemes_matches_nothing_without_an_error(tenant_a, query):
    MemoryFactory(tenant=tenant_a.tenant, text="the and of")
    assert fulltext_candidates(tenant=tenant_a.tenant, filters=SearchFilters(), query=query, k=5) == []


def test_fulltext_never_crosses_tenants(tenant_a, tenant_b):
    MemoryFactory(tenant=tenant_a.tenant, text="secret lighthouse")
    assert fulltext_candidates(tenant=tenant_b.tenant, filters=SearchFilters(), query="lighthouse", k=5) == []


def test_fulltext_takes_web_search_syntax_without_errors(tenant_a):
    row = MemoryFactory(tenant=tenant_a.tenant, text="state-of-the-art espresso machine")
    matching = ['"espresso machine" -grinder', "espresso OR tea", "state-of-the-art"]
    for query in [*matching, "a & b | c ! ("]:
        for match in ("all", "any"):
            found = fulltext_candidates(
                tenant=tenant_a.tenant, filters=SearchFilters(), query=query, k=5, match=match
            )
            assert _ids(found) == ([row.pk] if query in matching else []), (query, match)
