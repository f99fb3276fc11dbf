"""A read's access counts: recorded by the view that answered, written at once or by a thread."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory_app.models import Memory
from memory_app.selectors.search.query import memory_search
from memory_app.selectors.search.types import SearchFilters
from memory_app.services.rows.memories import memory_touch_counts
from memory_app.services.store.access import access_flush, memory_access_record
from tests.factories import MemoryFactory, TenantFactory


def _counts(*memories: Memory) -> list[int]:
    return [Memory.objects.get(pk=m.pk).access_count for m in memories]


@pytest.mark.django_db(transaction=True)
def test_a_search_alone_writes_nothing() -> None:
    tenant = TenantFactory()
    memory = MemoryFactory(tenant=tenant, user_id="u1", text="Gus plays the cello")
    with CaptureQueriesContext(connection) as queries:
        result = memory_search(tenant=tenant, query="cello", filters=SearchFilters(user_id="u1"), limit=5)
    assert [hit.memory.pk for hit in result.hits] == [memory.pk]
    writes = [
        q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(("UPDATE", "WITH"))
    ]
    assert not [sql for sql in writes if "access_count" in sql]
    assert _counts(memory) == [0]


@pytest.mark.django_db(transaction=True)
def test_counts_add_up_per_row_and_never_cross_tenants() -> None:
    tenant, other = TenantFactory(), TenantFactory()
    mine = MemoryFactory(tenant=tenant, text="fact")
    theirs = MemoryFactory(tenant=other, text="their fact")
    assert memory_touch_counts(tenant_id=tenant.pk, counts={mine.pk: 3, theirs.pk: 2}) == 1
    assert _counts(mine, theirs) == [3, 0]


@pytest.mark.django_db(transaction=True)
def test_held_counts_are_written_in_one_statement_per_tenant(settings) -> None:
    settings.MEMORY_ACCESS_FLUSH_SECONDS = 300  # the thread would wait: the test flushes itself
    tenant, other = TenantFactory(), TenantFactory()
    a, b = MemoryFactory(tenant=tenant, text="a"), MemoryFactory(tenant=tenant, text="b")
    c = MemoryFactory(tenant=other, text="c")
    memory_access_record(tenant=tenant, memory_ids=[a.pk, b.pk, a.pk])  # a row shown twice counts once
    memory_access_record(tenant=tenant, memory_ids=[a.pk])
    memory_access_record(tenant=other, memory_ids=[c.pk])
    assert _counts(a, b, c) == [0, 0, 0]  # held, not yet written
    with CaptureQueriesContext(connection) as queries:
        assert access_flush() == 3
    assert len(queries) == 2
    assert _counts(a, b, c) == [2, 1, 1]
    assert Memory.objects.get(pk=a.pk).last_accessed_at is not None


@pytest.mark.django_db(transaction=True)
def test_the_thread_writes_held_counts_within_its_interval(settings) -> None:
    settings.MEMORY_ACCESS_FLUSH_SECONDS = 0.1
    tenant = TenantFactory()
    memory = MemoryFactory(tenant=tenant, text="fact")
    memory_access_record(tenant=tenant, memory_ids=[memory.pk])
    deadline = time.monotonic() + 10
    while _counts(memory) != [1] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _counts(memory) == [1]
