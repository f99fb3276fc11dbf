"""The rows a search ranks: a full-text-only candidate's cosine comes from its stored vector."""

from __future__ import annotations

import numpy as np
import pytest

from memory_app.db.vectors import half_precision
from memory_app.selectors.search.rows import CandidateRow, candidate_rows, query_similarities
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
