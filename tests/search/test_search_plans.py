"""Scope-size planning: exact for small scopes, iterative HNSW and partial indexes for large ones."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory_app.models import Memory, SearchScopeIndex
from memory_app.selectors.search.candidates import (
    explain_vector_candidates,
    forget_indexed_scopes,
    forget_large_scopes,
    scope_plan,
    scope_rows,
    vector_candidates,
)
from memory_app.selectors.search.types import SearchFilters
from memory_app.services.maintenance.search_indexes import search_indexes_sync
from memory_app.text import normalized_hash
from tests.factories import unit_vector

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_index_cache():  # type: ignore[no-untyped-def]
    forget_indexed_scopes()
    forget_large_scopes()
    yield
    forget_indexed_scopes()
    forget_large_scopes()


def bulk_memories(tenant, n: int, *, user_id: str = "big", seed: int = 0, **attrs) -> list[Memory]:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = []
    for i in range(n):
        text = f"{user_id} memory {seed}-{i}"
        rows.append(
            Memory(
                tenant=tenant,
                user_id=user_id,
                text=text,
                text_hash=normalized_hash(text),
                embedding=vectors[i],
                embedding_model="all-MiniLM-L6-v2",
                **attrs,
            )
        )
    created = Memory.objects.bulk_create(rows)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_app_memory")
    return created


def exact_ids(tenant, filters: SearchFilters, query: np.ndarray, k: int) -> list[int]:  # type: ignore[no-untyped-def]
    return [
        c.memory_id
        for c in vector_candidates(tenant=tenant, filters=filters, query_embedding=query, k=k, plan="exact")
    ]


def test_a_small_scope_is_searched_exactly(tenant_a):
    bulk_memories(tenant_a.tenant, 30)
    plan = scope_plan(tenant=tenant_a.tenant, filters=SearchFilters(user_id="big"))
    assert (plan.plan, plan.scope_rows) == ("exact", 30)
    found = vector_candidates(
        tenant=tenant_a.tenant, filters=SearchFilters(user_id="big"), query_embedding=unit_vector(5), k=5
    )
    assert {c.plan for c in found} == {"exact"}


def test_a_scope_above_the_exact_limit_goes_to_hnsw_with_a_capped_count(tenant_a, settings):
    settings.SEARCH_EXACT_MAX_ROWS = 10
    bulk_memories(tenant_a.tenant, 40)
    assert scope_rows(tenant=tenant_a.tenant, filters=SearchFilters(user_id="big"), cap=10) == 11
    plan = scope_plan(tenant=tenant_a.tenant, filters=SearchFilters(user_id="big"))
    assert plan.plan == "hnsw_iterative"
    assert plan.ef_search == settings.SEARCH_HNSW_EF_SEARCH
    # The count covers only this tenant's rows.
    assert scope_plan(tenant=tenant_a.tenant, filters=SearchFilters(user_id="other")).plan == "exact"


def test_a_scope_counted_large_is_not_counted_again_while_remembered(tenant_a, settings):
    settings.SEARCH_EXACT_MAX_ROWS = 10
    bulk_memories(tenant_a.tenant, 40)
    filters = SearchFilters(user_id="big")
    assert scope_plan(tenant=tenant_a.tenant, filters=filters).scope_rows == 11
    with CaptureQueriesContext(connection) as queries:
        again = scope_plan(tenant=tenant_a.tenant, filters=filters)
    assert (again.plan, again.scope_rows) == ("hnsw_iterative", None)
    assert not [q for q in queries.captured_queries if "count(" in q["sql"]]
    # A small scope is counted every time: one new row can move it to the other plan.
    small = SearchFilters(user_id="other")
    bulk_memories(tenant_a.tenant, 3, user_id="other")
    assert scope_plan(tenant=tenant_a.tenant, filters=small).plan == "exact"
    with CaptureQueriesContext(connection) as queries:
        assert scope_plan(tenant=tenant_a.tenant, filters=small).scope_rows == 3
    assert [q for q in queries.captured_queries if "count(" in q["sql"]]


def test_a_mid_size_scope_is_counted_once_while_remembered(tenant_a, settings):
    settings.SEARCH_EXACT_MAX_ROWS = 1000
    bulk_memories(tenant_a.tenant, 250)
    filters = SearchFilters(user_id="big")
    assert scope_plan(tenant=tenant_a.tenant, filters=filters).scope_rows == 250
    with CaptureQueriesContext(connection) as queries:
        again = scope_plan(tenant=tenant_a.tenant, filters=filters)
    assert (again.plan, again.scope_rows) == ("exact", 250)
    assert not [q for q in queries.captured_queries if "count(" in q["sql"]]


def test_the_exact_plan_never_uses_the_hnsw_index(tenant_a):
    bulk_memories(tenant_a.tenant, 50)
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")  # make the index as tempting as it can be
        cursor.execute("SET enable_sort = off")
        try:
            plan = explain_vector_candidates(
                tenant=tenant_a.tenant,
                filters=SearchFilters(),
                query_embedding=unit_vector(1),
                k=5,
                plan="exact",
            )
        finally:
            cursor.execute("RESET enable_seqscan")
            cursor.execute("RESET enable_sort")
    assert "hnsw" not in plan


def test_iterative_scan_returns_k_rows_under_a_selective_filter(tenant_a, settings):
    settings.SEARCH_EXACT_MAX_ROWS = 10
    settings.SEARCH_HNSW_EF_SEARCH = 10  # a small beam: without iterative scan it finds 0-2 rare rows
    tenant = tenant_a.tenant
    bulk_memories(tenant, 600)
    bulk_memories(tenant, 12, seed=1, topics=["rare"])
    filters = SearchFilters(user_id="big", topics_any=("rare",))
    query = unit_vector(99)
    with connection.cursor() as cursor:
        cursor.execute("SET enable_sort = off")  # the index scan, not a bitmap scan of 15 rows
        try:
            plan = explain_vector_candidates(tenant=tenant, filters=filters, query_embedding=query, k=10)
            found = vector_candidates(tenant=tenant, filters=filters, query_embedding=query, k=10)
            cursor.execute("SET hnsw.iterative_scan = off")
            cursor.execute("SET hnsw.ef_search = 10")
            cursor.execute(
                "SELECT count(*) FROM (SELECT id FROM memory_app_memory WHERE tenant_id = %s "
                "AND status = 'active' AND %s = ANY(topics) ORDER BY embedding <=> %s::halfvec LIMIT 10) s",
                [tenant.pk, "rare", str(query.tolist()).replace(" ", "")],
            )
            without_iterative = cursor.fetchone()[0]
        finally:
            cursor.execute("RESET enable_sort")
            cursor.execute("RESET hnsw.iterative_scan")
            cursor.execute("RESET hnsw.ef_search")
    assert "memory_embedding_hnsw" in plan
    assert without_iterative < 10  # the scan this plan must not be
    assert {c.plan for c in found} == {"hnsw_iterative"}
    assert len(found) == 10
    # HNSW is approximate: with relaxed order the scan may meet the 11th-closest rare row before
    # one of the ten closest (one run in many did). Every row is a rare one, nearly all the closest.
    rare = set(exact_ids(tenant, filters, query, 12))
    assert {c.memory_id for c in found} <= rare
    assert len({c.memory_id for c in found} & set(exact_ids(tenant, filters, query, 10))) >= 9
    assert [c.score for c in found] == sorted(c.score for c in found)


def test_hnsw_falls_back_to_exact_when_the_scan_stops_before_k_rows(tenant_a, settings):
    settings.SEARCH_EXACT_MAX_ROWS = 10
    settings.SEARCH_HNSW_EF_SEARCH = 10
    settings.SEARCH_HNSW_MAX_SCAN_TUPLES = 100
    tenant = tenant_a.tenant
    bulk_memories(tenant, 600)
    bulk_memories(tenant, 12, seed=2, topics=["rare"])
    filters = SearchFilters(user_id="big", topics_any=("rare",))
    query = unit_vector(98)
    with connection.cursor() as cursor:
        cursor.execute("SET enable_sort = off")
        try:
            found = vector_candidates(tenant=tenant, filters=filters, query_embedding=query, k=10)
        finally:
            cursor.execute("RESET enable_sort")
    assert {c.plan for c in found} == {"exact_fallback"}
    assert [c.memory_id for c in found] == exact_ids(tenant, filters, query, 10)


def test_a_scope_smaller_than_k_returns_every_row_whatever_the_plan(tenant_a):
    bulk_memories(tenant_a.tenant, 4)
    for plan in ("exact", "hnsw_iterative", "partial_index"):
        found = vector_candidates(
            tenant=tenant_a.tenant, filters=SearchFilters(), query_embedding=unit_vector(3), k=10, plan=plan
        )
        assert len(found) == 4


def test_hnsw_settings_do_not_leak_into_the_callers_transaction(tenant_a, settings):
    settings.SEARCH_HNSW_EF_SEARCH = 123
    bulk_memories(tenant_a.tenant, 20)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search', true)")
        before = cursor.fetchone()[0]
        vector_candidates(
            tenant=tenant_a.tenant,
            filters=SearchFilters(),
            query_embedding=unit_vector(1),
            k=5,
            plan="hnsw_iterative",
        )
        cursor.execute("SELECT current_setting('hnsw.ef_search', true)")
        assert cursor.fetchone()[0] == before != "123"


def test_an_unknown_plan_is_refused(tenant_a):
    with pytest.raises(ValueError):
        vector_candidates(
            tenant=tenant_a.tenant, filters=SearchFilters(), query_embedding=unit_vector(1), k=5, plan="magic"
        )


def test_a_large_user_gets_a_partial_index_that_serves_only_its_scope(tenant_a, tenant_b):
    bulk_memories(tenant_a.tenant, 60)
    bulk_memories(tenant_a.tenant, 20, user_id="small", seed=3)
    bulk_memories(tenant_b.tenant, 60, seed=4)
    report = search_indexes_sync(tenant=tenant_a.tenant, min_rows=50)
    # The user "big" only: the namespace "default" holds 80 of 140 rows, more than half the table.
    assert len(report.created) == 1
    entry = SearchScopeIndex.objects.get(tenant=tenant_a.tenant, field="user_id")
    assert (entry.value, entry.rows) == ("big", 60)
    ours = SearchFilters(user_id="big")
    assert scope_plan(tenant=tenant_a.tenant, filters=ours).plan == "partial_index"
    assert scope_plan(tenant=tenant_b.tenant, filters=ours).plan == "exact"
    query = unit_vector(7)
    with connection.cursor() as cursor:
        cursor.execute("SET enable_sort = off")
        try:
            plan = explain_vector_candidates(
                tenant=tenant_a.tenant, filters=ours, query_embedding=query, k=10
            )
            other_plan = explain_vector_candidates(
                tenant=tenant_b.tenant, filters=ours, query_embedding=query, k=10, plan="hnsw_iterative"
            )
            found = vector_candidates(tenant=tenant_a.tenant, filters=ours, query_embedding=query, k=10)
        finally:
            cursor.execute("RESET enable_sort")
    assert entry.index_name in plan
    assert entry.index_name not in other_plan
    assert {c.plan for c in found} == {"partial_index"}
    assert [c.memory_id for c in found] == exact_ids(tenant_a.tenant, ours, query, 10)


def test_a_scope_that_shrank_loses_its_partial_index(tenant_a):
    rows = bulk_memories(tenant_a.tenant, 60)
    bulk_memories(tenant_a.tenant, 60, user_id="other", namespace="elsewhere", seed=5)
    created = search_indexes_sync(tenant=tenant_a.tenant, min_rows=50).created
    assert len(created) == 4  # users big and other, namespaces default and elsewhere
    Memory.objects.filter(pk__in=[m.pk for m in rows[:40]]).update(status="deleted")
    report = search_indexes_sync(tenant=tenant_a.tenant, min_rows=50)
    assert len(report.dropped) == 2 and len(report.kept) == 2
    assert not SearchScopeIndex.objects.filter(tenant=tenant_a.tenant, value__in=["big", "default"]).exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname = ANY(%s)", [report.dropped])
        assert cursor.fetchone()[0] == 0


def test_a_scope_holding_most_of_the_table_gets_no_partial_index(tenant_a, settings):
    settings.SEARCH_PARTIAL_INDEX_MAX_FRACTION = 0.5
    bulk_memories(tenant_a.tenant, 60)
    bulk_memories(tenant_a.tenant, 10, user_id="small", seed=6)
    report = search_indexes_sync(tenant=tenant_a.tenant, min_rows=50)
    assert report.created == []


def test_the_search_indexes_command_reports_what_it_would_build(tenant_a, capsys):
    bulk_memories(tenant_a.tenant, 60)
    bulk_memories(tenant_a.tenant, 60, user_id="other", namespace="elsewhere", seed=5)
    call_command("search_indexes", "--tenant", tenant_a.tenant.slug, "--min-rows", "50")
    out = capsys.readouterr().out
    assert "would create 4" in out and "dry run" in out
    assert not SearchScopeIndex.objects.exists()
    # the old flag still means a dry run, and says it is deprecated
    call_command("search_indexes", "--tenant", tenant_a.tenant.slug, "--min-rows", "50", "--dry-run")
    assert "deprecated" in capsys.readouterr().err
    assert not SearchScopeIndex.objects.exists()


def test_the_periodic_task_indexes_large_scopes_of_active_tenants_and_a_rerun_changes_nothing(
    tenant_a, settings
):
    from memory_app.tasks import search_indexes_periodic

    settings.SEARCH_PARTIAL_INDEX_MIN_ROWS = 50
    bulk_memories(tenant_a.tenant, 60)
    bulk_memories(tenant_a.tenant, 60, user_id="other", namespace="elsewhere", seed=5)
    assert search_indexes_periodic.apply().get() == {"created": 4, "dropped": 0, "kept": 0}
    assert search_indexes_periodic.apply().get() == {"created": 0, "dropped": 0, "kept": 4}


def test_a_large_scope_search_that_includes_superseded_rows_still_ranks_them_exactly(tenant_a, settings):
    # The shared HNSW index holds active rows only, so this query cannot use it: it must still
    # return k rows in exact order, superseded ones included.
    settings.SEARCH_EXACT_MAX_ROWS = 10
    rows = bulk_memories(tenant_a.tenant, 120)
    Memory.objects.filter(pk__in=[m.pk for m in rows[:60]]).update(status="superseded")
    filters = SearchFilters(user_id="big", include_superseded=True)
    query = unit_vector(5)
    found = vector_candidates(tenant=tenant_a.tenant, filters=filters, query_embedding=query, k=10)
    assert [c.memory_id for c in found] == exact_ids(tenant_a.tenant, filters, query, 10)
    assert any(c.memory_id in {m.pk for m in rows[:60]} for c in found)


def _scope_counts(queries: CaptureQueriesContext) -> int:
    return len([q for q in queries.captured_queries if q["sql"].startswith("SELECT count(*) FROM (SELECT 1")])


def test_a_search_counts_its_scope_once_for_both_plans(tenant_a):
    from memory_app.selectors.search.query import memory_search

    bulk_memories(tenant_a.tenant, 5, user_id="u")
    with CaptureQueriesContext(connection) as queries:
        memory_search(
            tenant=tenant_a.tenant,
            query="u memory",
            filters=SearchFilters(user_id="u"),
            query_embedding=unit_vector(3),
        )
    assert _scope_counts(queries) == 1
    # Outside a search every call counts: one new row can move a scope to the other plan.
    with CaptureQueriesContext(connection) as queries:
        scope_rows(tenant=tenant_a.tenant, filters=SearchFilters(user_id="u"), cap=10)
        scope_rows(tenant=tenant_a.tenant, filters=SearchFilters(user_id="u"), cap=10)
    assert _scope_counts(queries) == 2


@pytest.mark.django_db(transaction=True)
def test_on_its_own_the_hnsw_statement_and_its_settings_are_one_round_trip_that_leaves_nothing_set(settings):
    from tests.factories import TenantFactory

    settings.SEARCH_HNSW_EF_SEARCH = 123
    tenant = TenantFactory()
    bulk_memories(tenant, 20)
    exact = vector_candidates(
        tenant=tenant, filters=SearchFilters(), query_embedding=unit_vector(1), k=5, plan="exact"
    )
    with CaptureQueriesContext(connection) as queries:
        found = vector_candidates(
            tenant=tenant, filters=SearchFilters(), query_embedding=unit_vector(1), k=5, plan="hnsw_iterative"
        )
    assert len(queries.captured_queries) == 1 and "set_config" in queries.captured_queries[0]["sql"]
    assert [c.memory_id for c in found] == [c.memory_id for c in exact]
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search', true)")
        assert cursor.fetchone()[0] != "123"
