"""`supersedes` means one thing in every response: the ids this memory directly replaced."""

from __future__ import annotations

import pytest

from memory_app.services.lineage.changes import memory_supersede
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db


def test_list_search_and_detail_agree_on_what_a_memory_supersedes(tenant_a):
    old = MemoryFactory(tenant=tenant_a.tenant, user_id="u1", text="User's BMI goal is 23")
    new = MemoryFactory(tenant=tenant_a.tenant, user_id="u1", text="User's BMI goal is 24")
    memory_supersede(tenant=tenant_a.tenant, old_id=old.pk, new_id=new.pk)
    client = tenant_a.client

    detail = client.get(f"/api/v1/memories/{new.pk}").json()
    listed = {m["id"]: m for m in client.get("/api/v1/memories", {"user_id": "u1"}).json()["results"]}
    search = client.post(
        "/api/v1/memories/search", {"query": "BMI goal", "mode": "fulltext", "user_id": "u1"}, format="json"
    ).json()
    found = {hit["memory"]["id"]: hit["memory"] for hit in search["results"]}
    assert detail["supersedes"] == listed[new.pk]["supersedes"] == found[new.pk]["supersedes"] == [old.pk]
    assert client.get(f"/api/v1/memories/{old.pk}").json()["supersedes"] == []


def test_a_page_of_memories_costs_the_same_queries_whatever_its_length(
    tenant_a, django_assert_max_num_queries
):
    for i in range(3):
        memory_supersede(
            tenant=tenant_a.tenant,
            old_id=MemoryFactory(tenant=tenant_a.tenant, text=f"old {i}").pk,
            new_id=MemoryFactory(tenant=tenant_a.tenant, text=f"new {i}").pk,
        )
    with django_assert_max_num_queries(4) as small:
        tenant_a.client.get("/api/v1/memories", {"page_size": 1, "status": "any"})
    with django_assert_max_num_queries(len(small.captured_queries)):
        body = tenant_a.client.get("/api/v1/memories", {"page_size": 50, "status": "any"}).json()
    assert sorted(len(m["supersedes"]) for m in body["results"]) == [0, 0, 0, 1, 1, 1]


def test_a_store_and_a_search_read_what_each_memory_supersedes_with_its_row(tenant_a):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    old = MemoryFactory(tenant=tenant_a.tenant, user_id="u1", text="User's BMI goal is 23")
    new = MemoryFactory(tenant=tenant_a.tenant, user_id="u1", text="User's BMI goal is 24")
    memory_supersede(tenant=tenant_a.tenant, old_id=old.pk, new_id=new.pk)
    with CaptureQueriesContext(connection) as queries:
        search = tenant_a.client.post(
            "/api/v1/memories/search",
            {"query": "BMI goal", "mode": "fulltext", "user_id": "u1"},
            format="json",
        ).json()
        stored = tenant_a.client.post(
            "/api/v1/memories", {"text": "User walks daily", "user_id": "u1"}, format="json"
        )
    assert {hit["memory"]["id"]: hit["memory"]["supersedes"] for hit in search["results"]} == {
        new.pk: [old.pk]
    }
    assert stored.status_code == 201 and stored.json()["memory"]["supersedes"] == []
    separate = [
        q
        for q in queries.captured_queries
        if q["sql"].startswith('SELECT "memory_app_memory"."superseded_by_id"')
    ]
    assert separate == []
