"""Counting accesses: one UPDATE, and never a weaker commit for a caller's own writes."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory_app.models import Memory
from memory_app.services.rows.memories import memory_touch
from tests.factories import MemoryFactory, TenantFactory


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return str(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_touch_counts_each_returned_memory_once_and_only_in_its_tenant() -> None:
    tenant, other = TenantFactory(), TenantFactory()
    mine = [MemoryFactory(tenant=tenant, text=f"fact {i}") for i in range(3)]
    theirs = MemoryFactory(tenant=other, text="their fact")
    assert memory_touch(tenant=tenant, memory_ids=[mine[2].pk, mine[0].pk, theirs.pk]) == 2
    counts = dict(Memory.objects.values_list("pk", "access_count"))
    assert [counts[m.pk] for m in mine] == [1, 0, 1] and counts[theirs.pk] == 0


@pytest.mark.django_db(transaction=True)
def test_touch_on_its_own_is_one_round_trip_whose_setting_ends_with_it() -> None:
    tenant = TenantFactory()
    memories = [MemoryFactory(tenant=tenant, text=f"fact {i}") for i in range(2)]
    with CaptureQueriesContext(connection) as queries:
        assert memory_touch(tenant=tenant, memory_ids=[m.pk for m in memories]) == 2
    assert len(queries) == 1
    assert not connection.in_atomic_block and _synchronous_commit() == "on"
    assert sorted(Memory.objects.values_list("access_count", flat=True)) == [1, 1]


@pytest.mark.django_db(transaction=True)
def test_touch_inside_a_callers_transaction_leaves_its_commit_durable() -> None:
    tenant = TenantFactory()
    memory = MemoryFactory(tenant=tenant, text="a fact")
    with transaction.atomic():
        memory_touch(tenant=tenant, memory_ids=[memory.pk])
        assert _synchronous_commit() == "on"
    assert Memory.objects.get(pk=memory.pk).access_count == 1


def _updates_in_this_transaction() -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_stat_get_xact_tuples_updated(%s::regclass),"
            " pg_stat_get_xact_tuples_hot_updated(%s::regclass)",
            [Memory._meta.db_table, Memory._meta.db_table],
        )
        updated, hot = cursor.fetchone()
        return int(updated), int(hot)


@pytest.mark.django_db(transaction=True)
def test_counting_an_access_on_a_page_the_inserts_filled_is_a_heap_only_update() -> None:
    tenant = TenantFactory()
    # Enough rows of full size (the vector inline) to fill several pages to the fillfactor.
    memories = [MemoryFactory(tenant=tenant, text=f"fact number {i}") for i in range(18)]
    pages = _pages_of(memories)
    # One row per page, as a search's scattered results.
    scattered = [m for i, m in enumerate(memories) if i == 0 or pages[i] != pages[i - 1]]
    assert len(scattered) >= 3
    with transaction.atomic():
        for memory in scattered:
            memory_touch(tenant=tenant, memory_ids=[memory.pk])
        updated, hot = _updates_in_this_transaction()
    assert updated == len(scattered) and hot == len(scattered)


def _pages_of(memories: list[Memory]) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (ctid::text::point)[0]::int FROM {Memory._meta.db_table} WHERE id = ANY(%s) ORDER BY id",
            [[m.pk for m in memories]],
        )
        return [int(row[0]) for row in cursor.fetchall()]


@pytest.mark.django_db(transaction=True)
def test_a_page_holds_six_rows_of_about_1_kb_and_keeps_room_for_one_new_version() -> None:
    tenant = TenantFactory()
    # A short text's row is ~1 KB with its halfvec inline: six fill 6,553 B of a page (fillfactor 80).
    memories = [MemoryFactory(tenant=tenant, text=f"fact number {i}") for i in range(12)]
    assert _pages_of(memories) == [0] * 6 + [1] * 6
    with transaction.atomic():
        memory_touch(tenant=tenant, memory_ids=[memories[1].pk])
        updated, hot = _updates_in_this_transaction()
    assert updated == 1 and hot == 1
