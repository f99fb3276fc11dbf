"""The rows a search ranks: every candidate with its similarity, then the kept rows in full."""

from __future__ import annotations

import numpy as np
import pytest

from memory_app.db.vectors import half_precision
from memory_app.selectors.search.candidates import vector_candidate_rows, vector_candidates
from memory_app.selectors.search.rows import (
    RANK_COLUMNS,
    candidate_rows,
    candidate_rows_of,
    hits_of,
    member_rows,
    similarities_of,
)
from memory_app.selectors.search.types import SearchFilters
from tests.factories import MemoryFactory, TenantFactory


def _unit(vector) -> np.ndarray:  # type: ignore[no-untyped-def]
    v = np.asarray(vector, dtype=np.float32)
    return v / np.linalg.norm(v)


@pytest.mark.django_db
def test_candidate_rows_read_only_the_tenants_rows_with_their_ages_and_similarities():
    tenant, other = TenantFactory(), TenantFactory()
    mine = MemoryFactory(tenant=tenant, user_id="u1", text="I like tea")
    theirs = MemoryFactory(tenant=other, user_id="u1", text="I like coffee")
    query = _unit(MemoryFactory.build().embedding)
    rows, cosine = candidate_rows(tenant=tenant, ids=[mine.pk, theirs.pk], query_embedding=query)
    assert list(rows) == [mine.pk] and list(cosine) == [mine.pk]
    assert rows[mine.pk].created_epoch == pytest.approx(mine.created_at.timestamp())
    stored = half_precision(_unit(mine.embedding))
    assert cosine[mine.pk] == pytest.approx(float(stored @ half_precision(query)), abs=1e-3)


@pytest.mark.django_db
def test_without_a_query_vector_candidate_rows_give_no_similarity():
    tenant = TenantFactory()
    mine = MemoryFactory(tenant=tenant, user_id="u1", text="I like tea")
    rows, cosine = candidate_rows(tenant=tenant, ids=[mine.pk], query_embedding=None)
    assert list(rows) == [mine.pk] and cosine == {}


def _scope_of_notes():  # type: ignore[no-untyped-def]
    """Two tenants of eight notes each in scope u1, and a query vector."""
    tenant, other = TenantFactory(), TenantFactory()
    for i in range(8):
        MemoryFactory(tenant=tenant, user_id="u1", text=f"User note number {i}")
        MemoryFactory(tenant=other, user_id="u1", text=f"Other note number {i}")
    return tenant, other, np.asarray(MemoryFactory.build().embedding, dtype=np.float32)


@pytest.mark.django_db
@pytest.mark.parametrize("plan", ["exact", "hnsw_iterative"])
def test_the_vector_statement_reads_each_nearest_row_as_candidate_rows_does(plan):
    tenant, _other, query = _scope_of_notes()
    filters = SearchFilters(user_id="u1")
    found = vector_candidates(tenant=tenant, filters=filters, query_embedding=query, k=5, plan=plan)
    name, rows = vector_candidate_rows(
        tenant=tenant, filters=filters, query_embedding=query, k=5, plan=plan, columns=RANK_COLUMNS
    )
    assert [(r[0], pytest.approx(r[1]), r[2]) for r in rows] == [(c.memory_id, c.score, True) for c in found]
    assert name == found[0].plan
    expected, cosine = candidate_rows(tenant=tenant, ids=[c.memory_id for c in found], query_embedding=query)
    assert candidate_rows_of((row[0], *row[3:]) for row in rows) == expected
    assert similarities_of(rows) == pytest.approx(cosine)


@pytest.mark.django_db
@pytest.mark.parametrize("plan", ["exact", "hnsw_iterative"])
def test_rows_asked_for_beside_the_nearest_follow_them_with_their_similarity_and_none_twice(plan):
    tenant, other, query = _scope_of_notes()
    filters = SearchFilters(user_id="u1")
    nearest = [
        c.memory_id for c in vector_candidates(tenant=tenant, filters=filters, query_embedding=query, k=3)
    ]
    everyone = list(tenant.memories.values_list("pk", flat=True))
    also = [nearest[0], *[pk for pk in everyone if pk not in nearest][:2], other.memories.first().pk]
    _, rows = vector_candidate_rows(
        tenant=tenant, filters=filters, query_embedding=query, k=3, plan=plan, columns=RANK_COLUMNS, also=also
    )
    assert [row[0] for row in rows if row[2]] == nearest
    assert sorted(row[0] for row in rows if not row[2]) == sorted(also[1:3])
    _, cosine = candidate_rows(tenant=tenant, ids=[row[0] for row in rows], query_embedding=query)
    assert similarities_of(rows) == pytest.approx(cosine)


@pytest.mark.django_db
def test_member_rows_carry_text_vector_and_the_hit_as_the_model_reads_it():
    tenant, other = TenantFactory(), TenantFactory()
    old = MemoryFactory(tenant=tenant, user_id="u1", text="User lives in Leeds", status="superseded")
    new = MemoryFactory(tenant=tenant, user_id="u1", text="User lives in York")
    type(old).objects.filter(pk=old.pk).update(superseded_by=new)
    theirs = MemoryFactory(tenant=other, user_id="u1", text="Someone else")
    members = member_rows(tenant=tenant, ids=[new.pk, theirs.pk], fields=None)
    assert list(members) == [new.pk]
    member = members[new.pk]
    assert member.text == "User lives in York"
    np.testing.assert_array_equal(member.embedding, half_precision(np.asarray(new.embedding)))
    (hit,) = hits_of([member], fields=None)
    assert (hit.pk, hit.text, hit.user_id, hit.created_at) == (new.pk, new.text, "u1", new.created_at)
    assert hit.supersedes_ids == [old.pk]
    (narrow,) = hits_of(
        list(member_rows(tenant=tenant, ids=[new.pk], fields=("text",)).values()), fields=("text",)
    )
    assert narrow.text == new.text and "user_id" not in narrow.__dict__
