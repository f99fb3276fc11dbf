"""A tenant's operations reach one shard: every statement the service sends to a distributed
table for store, search, context, lineage and compaction is EXPLAINed on the coordinator and
its plan runs one task (docs/SCALING.md "Citus")."""

from __future__ import annotations

import pytest

from memory_app.selectors.compaction import ScopeKey
from memory_app.services.lineage.changes import memory_merge
from memory_app.services.maintenance.compaction import scope_compact
from tests.citus.routing import multi_shard, recorded, shard_tasks
from tests.factories import MemoryFactory
from tests.factories.ops import ScriptedJudge, near, put, scripted_tools

pytestmark = pytest.mark.django_db


def _assert_one_shard(statements: list[str]) -> None:
    assert shard_tasks(statements), "the operation sent no statement to a distributed table"
    assert multi_shard(statements) == []


def test_a_tenants_store_routes_every_statement_to_one_shard(tenant_a):
    tenant_a.client.post(
        "/api/v1/memories", {"text": "User's dog is called Rex", "user_id": "u1"}, format="json"
    )
    with recorded() as statements:
        response = tenant_a.client.post(
            "/api/v1/memories", {"text": "User's dog is named Rex", "user_id": "u1"}, format="json"
        )
    assert response.status_code in (200, 201)
    _assert_one_shard(statements)


def test_a_tenants_search_with_hnsw_and_bm25_routes_to_one_shard(tenant_a, settings):
    settings.SEARCH_EXACT_MAX_ROWS = 0  # the HNSW plan even for this small scope
    for text in ("User likes green tea", "User runs every morning", "User's sister lives in Oslo"):
        tenant_a.client.post("/api/v1/memories", {"text": text, "user_id": "u1"}, format="json")
    with recorded() as statements:
        response = tenant_a.client.post(
            "/api/v1/memories/search",
            {"query": "what does the user drink", "filters": {"user_id": "u1"}},
            format="json",
        )
    assert response.status_code == 200, response.json()
    assert response.json()["results"]
    _assert_one_shard(statements)
    routed = [sql.lower() for _, sql, _ in shard_tasks(statements)]
    # The vector query (the HNSW plan's form; the worker's planner picks the index by cost) and
    # the BM25 query were each among the one-shard statements.
    assert any("<=>" in sql for sql in routed)
    assert any("search_vector" in sql for sql in routed)


def test_a_tenants_whole_context_routes_to_one_shard(tenant_a):
    tenant_a.client.post(
        "/api/v1/memories", {"text": "User is allergic to peanuts", "user_id": "u1"}, format="json"
    )
    with recorded() as statements:
        response = tenant_a.client.post(
            "/api/v1/context/all",
            {"query": "what should the user avoid eating", "user_id": "u1", "session_id": "s1"},
            format="json",
        )
    assert response.status_code == 200, response.json()
    _assert_one_shard(statements)


def test_a_tenants_merge_and_lineage_route_to_one_shard(tenant_a):
    tenant = tenant_a.tenant
    a = MemoryFactory(tenant=tenant, text="User's dog is Rex")
    b = MemoryFactory(tenant=tenant, text="Dog named Rex")
    with recorded() as statements:
        change = memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk])
        tree = tenant_a.client.get(f"/api/v1/memories/{change.result_id}/lineage")
    assert tree.status_code == 200 and tree.json()["derived_from"]
    _assert_one_shard(statements)


def test_a_tenants_compaction_routes_to_one_shard(tenant_a):
    tenant = tenant_a.tenant
    put(tenant, "likes green tea", near(1, 0.05, 1))
    put(tenant, "User likes green tea", near(1, 0.05, 2))
    judge = ScriptedJudge({frozenset(("likes green tea", "User likes green tea")): ("duplicate", 0.95)})
    with recorded() as statements:
        report = scope_compact(
            tenant=tenant, scope=ScopeKey(tenant.pk, "u1", "default", "episodic"), tools=scripted_tools(judge)
        )
    assert report.merged == 2  # both rows went into the merge result
    _assert_one_shard(statements)
