"""Counting accesses: one UPDATE, and never a weaker commit for a caller's own writes."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from memory_app.models import Memory
from memory_app.services.store.memories import memory_touch
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
def test_touch_inside_a_callers_transaction_leaves_its_commit_durable() -> None:
    tenant = TenantFactory()
    memory = MemoryFactory(tenant=tenant, text="a fact")
    with transaction.atomic():
        memory_touch(tenant=tenant, memory_ids=[memory.pk])
        assert _synchronous_commit() == "on"
    assert Memory.objects.get(pk=memory.pk).access_count == 1
