"""The rows a search ranks: every candidate with its similarity, then the kept rows in full."""

from __future__ import annotations

import numpy as np
import pytest

from memory_app.db.vectors import half_precision
from memory_app.selectors.search.candidates import (
    fulltext_candidates,
    vector_candidate_rows,
    vector_candidates,
)
from memory_app.selectors.search.lexical import bm25_candidates
from memory_app.selectors.search.rows import (
    LEXICAL_COLUMNS,
    RANK_COLUMNS,
    candidate_rows_of,
    hits_of,
    lexical_rows,
    member_rows,
    similarities_of,
)
from memory_app.selectors.search.types import SearchFilters
from tests.factories import MemoryFactory, TenantFactory


def _unit(vector) -> np.ndarray:  # type: ignore[no-untyped-def]
    v = np.asarray(vector, dtype=np.float32)
    return v / np.linalg.norm(v)


def _exact_similarities(tenant, query: np.ndarray) -> dict[int, float]:  # type: ignore[no-untyped-def]
    """pgvector's similarity to the query of every row of the tenant's scope u1."""
    rows = vector_candidate_rows(
        tenant=tenant, filters=SearchFilters(user_id="u1"), query_embedding=query, k=100, plan="exact"
    )[1]
    return similarities_of(rows)


@pytest.mark.django_db
@pytest.mark.parametrize("lexical", ["bm25", "ts_rank"])
def test_full_text_candidates_carry_their_rows_and_the_similarity_pgvector_gives_them(lexical):
    tenant, other = TenantFactory(), TenantFactory()
    mine = [MemoryFactory(tenant=tenant, user_id="u1", text=f"I like tea number {i}") for i in range(3)]
    MemoryFactory(tenant=other, user_id="u1", text="I like tea as well")
    query = _unit(MemoryFactory.build().embedding)
    find = bm25_candidates if lexical == "bm25" else fulltext_candidates
    found = find(
        tenant=tenant, filters=SearchFilters(user_id="u1"), query="tea", k=10, columns=LEXICAL_COLUMNS
    )

    rows, cosine = lexical_rows(found, query_embedding=query)

    assert sorted(rows) == sorted(m.pk for m in mine) and sorted(cosine) == sorted(rows)
    assert rows[mine[0].pk].created_epoch == pytest.approx(mine[0].created_at.timestamp())
    assert cosine == pytest.approx(_exact_similarities(tenant, query), abs=1e-6)


@pytest.mark.django_db
def test_without_a_query_vector_full_text_rows_give_no_similarity():
    tenant = TenantFactory()
    mine = MemoryFactory(tenant=tenant, user_id="u1", text="I like tea")
    found = bm25_candidates(
        tenant=tenant, filters=SearchFilters(user_id="u1"), query="tea", k=5, columns=LEXICAL_COLUMNS
    )
    rows, cosine = lexical_rows(found, query_embedding=None)
    assert list(rows) == [mine.pk] and cosine == {}


@pytest.mark.django_db
def test_a_full_text_row_stored_without_a_vector_has_rank_columns_but_no_similarity():
    tenant = TenantFactory()
    mine = MemoryFactory(tenant=tenant, user_id="u1", text="I like tea")
    type(mine).objects.filter(pk=mine.pk).update(embedding=None)
    found = bm25_candidates(
        tenant=tenant, filters=SearchFilters(user_id="u1"), query="tea", k=5, columns=LEXICAL_COLUMNS
    )
    rows, cosine = lexical_rows(found, query_embedding=_unit(MemoryFactory.build().embedding))
    assert list(rows) == [mine.pk] and cosine == {}


@pytest.mark.django_db
def test_full_text_candidates_are_the_same_with_their_rows_read_or_not():
    tenant = TenantFactory()
    for i in range(6):
        MemoryFactory(tenant=tenant, user_id="u1", text=f"User planted {i} tomato seedlings in the garden")
    filters = SearchFilters(user_id="u1")
    plain = bm25_candidates(tenant=tenant, filters=filters, query="tomato garden", k=4)
    read = bm25_candidates(
        tenant=tenant, filters=filters, query="tomato garden", k=4, columns=LEXICAL_COLUMNS
    )
    assert [(c.memory_id, c.score) for c in read] == [(c.memory_id, c.score) for c in plain]
    assert all(c.row == () for c in plain) and all(len(c.row) == 5 for c in read)


def _scope_of_notes():  # type: ignore[no-untyped-def]
    """Two tenants of eight notes each in scope u1, and a query vector."""
    tenant, other = TenantFactory(), TenantFactory()
    for i in range(8):
        MemoryFactory(tenant=tenant, user_id="u1", text=f"User note number {i}")
        MemoryFactory(tenant=other, user_id="u1", text=f"Other note number {i}")
    return tenant, other, np.asarray(MemoryFactory.build().embedding, dtype=np.float32)


@pytest.mark.django_db
@pytest.mark.parametrize("plan", ["exact", "hnsw_iterative"])
def test_the_vector_statement_reads_each_nearest_row_with_its_rank_columns(plan):
    tenant, _other, query = _scope_of_notes()
    filters = SearchFilters(user_id="u1")
    found = vector_candidates(tenant=tenant, filters=filters, query_embedding=query, k=5, plan=plan)
    name, rows = vector_candidate_rows(
        tenant=tenant, filters=filters, query_embedding=query, k=5, plan=plan, columns=RANK_COLUMNS
    )
    assert [(r[0], pytest.approx(r[1])) for r in rows] == [(c.memory_id, c.score) for c in found]
    assert name == found[0].plan
    read = candidate_rows_of((row[0], *row[2:]) for row in rows)
    for memory in tenant.memories.filter(pk__in=read):
        assert read[memory.pk].created_epoch == pytest.approx(memory.created_at.timestamp())
        assert read[memory.pk].confidence == pytest.approx(memory.confidence)


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
