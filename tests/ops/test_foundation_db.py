from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from memory_app.models import Memory
from tests.factories import MemoryFactory, TenantFactory

pytestmark = pytest.mark.django_db


def _indexdef(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        row = cursor.fetchone()
    assert row, f"index {name} is missing"
    return str(row[0])


def test_memory_embedding_has_an_hnsw_cosine_index_over_active_rows_only():
    definition = _indexdef("memory_embedding_hnsw")
    assert "USING hnsw" in definition
    assert "halfvec_cosine_ops" in definition
    # Superseded rows are history: retiring one must not cost an insert into the graph.
    assert "WHERE" in definition and "'active'" in definition


def test_full_text_has_a_gin_index_on_a_generated_tsvector():
    assert "USING gin" in _indexdef("memory_search_gin")
    memory = MemoryFactory(text="The user runs marathons", context="training notes")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_vector @@ plainto_tsquery('english', 'running marathon') FROM memory_app_memory "
            "WHERE id = %s",
            [memory.pk],
        )
        assert cursor.fetchone()[0] is True


@pytest.mark.parametrize("value", [-0.01, 1.01, 7.0])
def test_database_refuses_confidence_outside_zero_to_one(value):
    memory = MemoryFactory()
    memory.confidence = value
    with pytest.raises(IntegrityError, match="memory_confidence_range"), transaction.atomic():
        memory.save()


@pytest.mark.parametrize("field", ["access_count", "helpful_count", "harmful_count"])
def test_database_refuses_negative_counts(field):
    memory = MemoryFactory()
    setattr(memory, field, -1)
    with pytest.raises(IntegrityError, match=f"memory_{field}_nonneg"), transaction.atomic():
        memory.save()


def test_database_refuses_two_active_rows_with_the_same_text_in_one_scope():
    tenant = TenantFactory()
    MemoryFactory(tenant=tenant, text="User likes tea")
    with pytest.raises(IntegrityError, match="memory_active_text_unique"), transaction.atomic():
        MemoryFactory(tenant=tenant, text="user likes TEA!")


def test_same_text_is_allowed_in_another_scope_or_when_superseded():
    tenant = TenantFactory()
    MemoryFactory(tenant=tenant, text="User likes tea", user_id="a")
    MemoryFactory(tenant=tenant, text="User likes tea", user_id="b")
    MemoryFactory(tenant=tenant, text="User likes tea", user_id="a", status="superseded")
    rows = Memory.objects.filter(tenant=tenant, text="User likes tea")
    assert sorted(rows.values_list("user_id", "status")) == [
        ("a", "active"),
        ("a", "superseded"),
        ("b", "active"),
    ]


def test_migrations_are_complete():
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
