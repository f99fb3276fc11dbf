from __future__ import annotations

import numpy as np
import pytest
from django.db import transaction

from memory_app.db.vectors import half_precision
from memory_app.errors import ApplicationError
from memory_app.models import KeptApartPair, Memory, MemoryChange
from memory_app.services.actors import Actor
from memory_app.services.lineage.changes import (
    memory_change_undo,
    memory_merge,
    memory_snapshot,
    memory_supersede,
)
from memory_app.services.review.queue import review_cluster_create
from memory_app.services.rows.memories import memory_build
from tests.factories import MemoryFactory, TenantFactory, unit_vector

pytestmark = pytest.mark.django_db


def test_merge_keeps_the_sources_and_builds_a_richer_result():
    tenant = TenantFactory()
    a = MemoryFactory(tenant=tenant, text="User likes tea", topics=["drinks"], access_count=2, confidence=0.4)
    b = MemoryFactory(
        tenant=tenant,
        text="User likes green tea in the morning",
        entities=["tea"],
        helpful_count=1,
        confidence=0.9,
    )
    change = memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk], relation="refine")
    result = change.result
    assert result.text == "User likes green tea in the morning"
    assert result.topics == ["drinks"] and result.entities == ["tea"]
    assert (result.access_count, result.helpful_count, result.confidence) == (2, 1, 0.9)
    for source in (a, b):
        source.refresh_from_db()
        assert source.status == "superseded"
        assert source.superseded_by_id == result.pk
    assert Memory.objects.filter(tenant=tenant).count() == 3
    assert set(change.sources.values_list("memory_id", flat=True)) == {a.pk, b.pk}


def test_the_merge_result_keeps_the_vector_of_the_source_whose_text_it_keeps():
    tenant = TenantFactory()
    short = MemoryFactory(tenant=tenant, text="User likes tea", embedding=unit_vector(1))
    rich = MemoryFactory(tenant=tenant, text="User likes green tea in the morning", embedding=unit_vector(2))
    change = memory_merge(tenant=tenant, memory_ids=[short.pk, rich.pk])
    result = Memory.objects.get(pk=change.result_id)
    assert result.text == rich.text
    stored = Memory.objects.get(pk=rich.pk)
    assert np.array_equal(np.asarray(result.embedding), np.asarray(stored.embedding))
    assert result.embedding_model == stored.embedding_model


def test_the_vectors_a_merge_writes_read_back_exactly():
    """The incoming memory's vector goes as a text literal (memory_app.db.vector_sql), also for the
    result that keeps its text: every value (a float16, as embed_texts gives) must come back bit for bit."""
    tenant = TenantFactory()
    stored = MemoryFactory(tenant=tenant, text="User likes tea", user_id="u1")
    vector = half_precision(unit_vector(9) / 3.0)
    incoming = memory_build(
        tenant=tenant, text="User likes green tea in the morning", embedding=vector, user_id="u1"
    )
    change = memory_merge(tenant=tenant, memory_ids=[stored.pk], incoming=incoming, relation="refine")
    for pk in (incoming.pk, change.result_id):
        assert np.array_equal(np.asarray(Memory.objects.get(pk=pk).embedding, dtype=np.float32), vector)
    assert incoming.embedding is not None and np.array_equal(incoming.embedding, vector)


def test_a_merge_result_of_a_source_without_vector_has_none():
    tenant = TenantFactory()
    short = MemoryFactory(tenant=tenant, text="User likes tea", embedding=unit_vector(1))
    rich = MemoryFactory(tenant=tenant, text="User likes green tea in the morning", embedding=None)
    change = memory_merge(tenant=tenant, memory_ids=[short.pk, rich.pk])
    result = Memory.objects.get(pk=change.result_id)
    assert (result.embedding, result.embedding_model) == (None, "")


def test_a_store_time_merge_writes_the_rows_it_returns():
    """The ids a merge reserves up front are the rows it writes: the returned change, its result and
    the incoming memory (stored already superseded, its snapshot active) all read back as returned."""
    tenant = TenantFactory()
    stored = MemoryFactory(tenant=tenant, text="User's dog is called Rex", embedding=unit_vector(3))
    incoming = memory_build(
        tenant=tenant, text="The user's dog is named Rex", embedding=unit_vector(4), user_id=stored.user_id
    )
    change = memory_merge(tenant=tenant, memory_ids=[stored.pk], incoming=incoming)
    saved = MemoryChange.objects.get(pk=change.pk)
    assert (saved.result_id, saved.operation, saved.relation) == (change.result_id, "merge", "duplicate")
    row = Memory.objects.get(pk=incoming.pk)
    assert (row.status, row.superseded_by_id, row.text) == ("superseded", change.result_id, incoming.text)
    snapshots = dict(saved.sources.values_list("memory_id", "snapshot"))
    assert set(snapshots) == {stored.pk, incoming.pk}
    assert (snapshots[incoming.pk]["status"], snapshots[incoming.pk]["superseded_by_id"]) == ("active", None)
    assert not incoming._state.adding and not change._state.adding


def test_undo_of_a_merge_restores_the_sources_byte_for_byte():
    tenant = TenantFactory()
    a = MemoryFactory(tenant=tenant, text="User's dog is called Rex", metadata={"k": 1})
    b = MemoryFactory(tenant=tenant, text="The user's dog is named Rex")
    before = {m.pk: memory_snapshot(Memory.objects.get(pk=m.pk)) for m in (a, b)}
    change = memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk], actor=Actor.system())
    memory_change_undo(tenant=tenant, change_id=change.pk)
    after = {m.pk: memory_snapshot(Memory.objects.get(pk=m.pk)) for m in (a, b)}
    assert after == before
    change.refresh_from_db()
    assert change.undone_at is not None
    assert Memory.objects.get(pk=change.result_id).status == "deleted"


def test_update_supersedes_older_value_and_undo_restores_it():
    tenant = TenantFactory()
    old = MemoryFactory(tenant=tenant, text="User's target BMI is 23")
    new = MemoryFactory(tenant=tenant, text="User's target BMI is 24")
    before = memory_snapshot(Memory.objects.get(pk=old.pk))
    change = memory_supersede(tenant=tenant, old_id=old.pk, new_id=new.pk)
    old.refresh_from_db()
    assert (old.status, old.superseded_by_id) == ("superseded", new.pk)
    memory_change_undo(tenant=tenant, change_id=change.pk)
    assert memory_snapshot(Memory.objects.get(pk=old.pk)) == before
    assert Memory.objects.get(pk=new.pk).status == "active"


def test_undo_twice_is_refused():
    tenant = TenantFactory()
    a, b = MemoryFactory(tenant=tenant), MemoryFactory(tenant=tenant)
    change = memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk])
    memory_change_undo(tenant=tenant, change_id=change.pk)
    with pytest.raises(ApplicationError, match="already undone"):
        memory_change_undo(tenant=tenant, change_id=change.pk)


def test_undo_of_a_merge_whose_result_was_merged_again_asks_for_the_later_undo_first():
    tenant = TenantFactory()
    a, b, c = (MemoryFactory(tenant=tenant) for _ in range(3))
    first = memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk])
    second = memory_merge(tenant=tenant, memory_ids=[first.result_id, c.pk])
    with pytest.raises(ApplicationError, match="undo that change first"):
        memory_change_undo(tenant=tenant, change_id=first.pk)
    memory_change_undo(tenant=tenant, change_id=second.pk)
    memory_change_undo(tenant=tenant, change_id=first.pk)
    assert set(Memory.objects.filter(tenant=tenant, status="active").values_list("pk", flat=True)) == {
        a.pk,
        b.pk,
        c.pk,
    }


def test_merge_across_users_is_refused():
    tenant = TenantFactory()
    a = MemoryFactory(tenant=tenant, user_id="u1")
    b = MemoryFactory(tenant=tenant, user_id="u2")
    with pytest.raises(ApplicationError, match="one user"):
        memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk])


def test_another_tenant_cannot_merge_or_undo_my_memories():
    mine, theirs = TenantFactory(), TenantFactory()
    a, b = MemoryFactory(tenant=mine), MemoryFactory(tenant=mine)
    # memory_merge has no savepoint of its own: carrying on after its error takes one here.
    with pytest.raises(ApplicationError, match="not found"), transaction.atomic():
        memory_merge(tenant=theirs, memory_ids=[a.pk, b.pk])
    change = memory_merge(tenant=mine, memory_ids=[a.pk, b.pk])
    with pytest.raises(ApplicationError, match="not found"):
        memory_change_undo(tenant=theirs, change_id=change.pk)


def test_review_cluster_is_not_queued_for_pairs_kept_apart_or_already_pending():
    tenant = TenantFactory()
    a, b, c = (MemoryFactory(tenant=tenant) for _ in range(3))
    assert review_cluster_create(tenant=tenant, memory_ids=[a.pk, b.pk], verdict="duplicate") is not None
    assert review_cluster_create(tenant=tenant, memory_ids=[b.pk, a.pk]) is None
    low, high = sorted([a.pk, c.pk])
    KeptApartPair.objects.create(tenant=tenant, memory_low_id=low, memory_high_id=high)
    assert review_cluster_create(tenant=tenant, memory_ids=[a.pk, c.pk]) is None
