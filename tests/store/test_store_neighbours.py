"""Store-time candidates: both plans, the radius outside the LIMIT, scope and status isolation."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory_app.selectors.store.neighbours import Scope, scope_is_small, scope_neighbours
from tests.factories import MemoryFactory, TenantFactory, unit_vector
from tests.factories.store import at_distance

pytestmark = pytest.mark.django_db

SCOPE = Scope(user_id="u1", namespace="default", kind="episodic")


def _scope_rows(tenant, base, distances):  # type: ignore[no-untyped-def]
    return [
        MemoryFactory(tenant=tenant, user_id="u1", embedding=at_distance(base, d, 100 + i))
        for i, d in enumerate(distances)
    ]


@pytest.mark.parametrize("exact", [True, False])
def test_neighbours_are_the_nearest_rows_within_the_radius_nearest_first(exact):
    tenant = TenantFactory()
    base = unit_vector(1)
    rows = _scope_rows(tenant, base, [0.3, 0.05, 0.6, 0.2, 0.9])
    found = scope_neighbours(tenant=tenant, scope=SCOPE, embedding=base, k=3, radius=0.5, exact=exact)
    assert [n.memory_id for n in found] == [rows[1].pk, rows[3].pk, rows[0].pk]
    assert [round(n.distance, 4) for n in found] == [0.05, 0.2, 0.3]
    assert found[0].text == rows[1].text


@pytest.mark.parametrize("exact", [True, False])
def test_an_unsatisfiable_radius_returns_nothing_rather_than_far_rows(exact):
    tenant = TenantFactory()
    base = unit_vector(2)
    _scope_rows(tenant, base, [0.4, 0.5])
    assert scope_neighbours(tenant=tenant, scope=SCOPE, embedding=base, k=5, radius=0.1, exact=exact) == []


@pytest.mark.parametrize("exact", [True, False])
def test_other_scopes_tenants_and_inactive_rows_are_never_candidates(exact):
    tenant, other = TenantFactory(), TenantFactory()
    base = unit_vector(3)
    MemoryFactory(tenant=other, user_id="u1", embedding=base)
    MemoryFactory(tenant=tenant, user_id="u2", embedding=base)
    MemoryFactory(tenant=tenant, user_id="u1", namespace="work", embedding=base)
    MemoryFactory(tenant=tenant, user_id="u1", kind="semantic", embedding=base)
    MemoryFactory(tenant=tenant, user_id="u1", status="superseded", embedding=base)
    mine = MemoryFactory(tenant=tenant, user_id="u1", embedding=at_distance(base, 0.2, 9))
    found = scope_neighbours(tenant=tenant, scope=SCOPE, embedding=base, k=5, radius=1.0, exact=exact)
    assert [n.memory_id for n in found] == [mine.pk]


@pytest.mark.parametrize("exact", [True, False])
def test_a_memory_about_one_person_only_meets_memories_about_that_person(exact):
    tenant = TenantFactory()
    base = unit_vector(5)
    MemoryFactory(tenant=tenant, user_id="u1", embedding=base, metadata={"about": "Melanie"})
    MemoryFactory(tenant=tenant, user_id="u1", embedding=base)  # about nobody named
    hers = MemoryFactory(
        tenant=tenant, user_id="u1", embedding=at_distance(base, 0.2, 11), metadata={"about": "Caroline"}
    )
    found = scope_neighbours(
        tenant=tenant, scope=SCOPE, embedding=base, k=5, radius=1.0, exact=exact, about="Caroline"
    )
    assert [n.memory_id for n in found] == [hers.pk]
    # Without a person, every row of the scope is a candidate, as before.
    assert (
        len(scope_neighbours(tenant=tenant, scope=SCOPE, embedding=base, k=5, radius=1.0, exact=exact)) == 3
    )


def test_the_plan_follows_the_scope_size(settings):
    tenant = TenantFactory()
    base = unit_vector(4)
    _scope_rows(tenant, base, [0.1, 0.2, 0.3])
    settings.STORE_EXACT_SCOPE_MAX = 2
    assert not scope_is_small(tenant=tenant, scope=SCOPE)
    with CaptureQueriesContext(connection) as ctx:
        scope_neighbours(tenant=tenant, scope=SCOPE, embedding=base, k=2, radius=1.0)
    assert any("hnsw.iterative_scan" in q["sql"] for q in ctx.captured_queries)
    settings.STORE_EXACT_SCOPE_MAX = 3
    assert scope_is_small(tenant=tenant, scope=SCOPE)
    with CaptureQueriesContext(connection) as ctx:
        scope_neighbours(tenant=tenant, scope=SCOPE, embedding=base, k=2, radius=1.0)
    assert any("MATERIALIZED" in q["sql"] for q in ctx.captured_queries)
    assert not any("hnsw" in q["sql"] for q in ctx.captured_queries)


def test_a_scope_counted_large_skips_the_count_until_the_entry_expires(settings, monkeypatch):
    import memory_app.selectors.store.neighbours as neighbours

    tenant = TenantFactory()
    _scope_rows(tenant, unit_vector(5), [0.1, 0.2, 0.3])
    settings.STORE_EXACT_SCOPE_MAX = 2
    assert not scope_is_small(tenant=tenant, scope=SCOPE)
    with CaptureQueriesContext(connection) as ctx:
        assert not scope_is_small(tenant=tenant, scope=SCOPE)
    assert ctx.captured_queries == []
    monkeypatch.setattr(neighbours._large_scopes, "ttl", 0.0)
    with CaptureQueriesContext(connection) as ctx:
        assert not scope_is_small(tenant=tenant, scope=SCOPE)
    assert len(ctx.captured_queries) == 1
