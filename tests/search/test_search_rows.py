"""The rows a search ranks: a full-text-only candidate's cosine comes from its stored vector."""

from __future__ import annotations

import numpy as np
import pytest

from memory_app.db.vectors import half_precision
from memory_app.selectors.search.candidates import vector_candidate_rows, vector_candidates
from memory_app.selectors.search.rows import (
    CANDIDATE_COLUMNS,
    CandidateRow,
    candidate_rows,
    candidate_rows_of,
    query_similarities,
)
from memory_app.selectors.search.types import SearchFilters
from tests.factories import MemoryFactory, TenantFactory


def _row(pk: int, embedding: np.ndarray | None) -> CandidateRow:
    return CandidateRow(pk, 0.0, 0.5, 0, 0, f"text {pk}", embedding)


def test_the_similarity_of_a_row_is_the_inner_product_of_its_vector_with_the_querys():
    query = np.array([0.6, 0.8], dtype=np.float32)
    rows = {1: _row(1, np.array([1.0, 0.0], dtype=np.float32)), 2: _row(2, None)}
    assert query_similarities(rows, [1, 2, 3], query) == {1: pytest.approx(0.6)}


def test_without_a_query_vector_no_row_has_a_similarity():
    assert query_similarities({1: _row(1, np.ones(2, dtype=np.float32))}, [1], None) == {}


@pytest.mark.django_db
def test_candidate_rows_read_only_the_tenants_rows_with_their_vectors_and_ages():
    tenant, other = TenantFactory(), TenantFactory()
    mine = MemoryFactory(tenant=tenant, user_id="u1", text="I like tea")
    theirs = MemoryFactory(tenant=other, user_id="u1", text="I like coffee")
    rows = candidate_rows(tenant=tenant, ids=[mine.pk, theirs.pk])
    assert list(rows) == [mine.pk]
    row = rows[mine.pk]
    assert row.text == "I like tea"
    assert row.created_epoch == pytest.approx(mine.created_at.timestamp())
    # The factory's float32 vector, as the halfvec column keeps it.
    np.testing.assert_array_equal(row.embedding, half_precision(np.asarray(mine.embedding)))


@pytest.mark.django_db
@pytest.mark.parametrize("plan", ["exact", "hnsw_iterative"])
def test_the_vector_statement_reads_each_candidates_row_as_candidate_rows_does(plan):
    tenant, other = TenantFactory(), TenantFactory()
    for i in range(8):
        MemoryFactory(tenant=tenant, user_id="u1", text=f"User note number {i}")
        MemoryFactory(tenant=other, user_id="u1", text=f"Other note number {i}")
    query = np.asarray(MemoryFactory.build().embedding, dtype=np.float32)
    filters = SearchFilters(user_id="u1")
    found = vector_candidates(tenant=tenant, filters=filters, query_embedding=query, k=5, plan=plan)
    name, rows = vector_candidate_rows(
        tenant=tenant, filters=filters, query_embedding=query, k=5, plan=plan, columns=CANDIDATE_COLUMNS
    )
    assert [(r[0], pytest.approx(r[1])) for r in rows] == [(c.memory_id, c.score) for c in found]
    assert name == found[0].plan
    expected = candidate_rows(tenant=tenant, ids=[c.memory_id for c in found])
    read_all = candidate_rows_of([(row[0], *row[2:]) for row in rows])
    for row in rows:
        read = read_all[row[0]]
        assert (read.pk, read.text, read.created_epoch) == (
            expected[row[0]].pk,
            expected[row[0]].text,
            expected[row[0]].created_epoch,
        )
        np.testing.assert_array_equal(read.embedding, expected[row[0]].embedding)
