from __future__ import annotations

import pytest
from django.utils import timezone

from memory_app.services.api_keys import api_key_revoke
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db


def test_memories_without_a_key_answer_401_with_the_error_body(anon_client):
    response = anon_client.get("/api/v1/memories")
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "not_authenticated"
    assert error["message"]
    assert error["fields"] == {}
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_malformed_or_unknown_key_answers_401(anon_client):
    anon_client.credentials(HTTP_AUTHORIZATION="Bearer mem_nothere_abc")
    assert anon_client.get("/api/v1/memories").status_code == 401
    anon_client.credentials(HTTP_AUTHORIZATION="Token something")
    assert anon_client.get("/api/v1/memories").json()["error"]["code"] == "authentication_failed"


def test_a_revoked_key_is_refused(tenant_a):
    from memory_app.models import ApiKey

    api_key_revoke(api_key=ApiKey.objects.get(tenant=tenant_a.tenant))
    assert tenant_a.client.get("/api/v1/memories").status_code == 401


def test_a_wrong_secret_with_a_valid_prefix_is_refused(tenant_a):
    prefix = tenant_a.raw_key.split("_")[1]
    tenant_a.client.credentials(HTTP_AUTHORIZATION=f"Bearer mem_{prefix}_forged")
    assert tenant_a.client.get("/api/v1/memories").status_code == 401


def test_tenant_a_key_never_returns_tenant_b_rows(tenant_a, tenant_b):
    mine = MemoryFactory.create_batch(3, tenant=tenant_a.tenant)
    MemoryFactory.create_batch(4, tenant=tenant_b.tenant)
    response = tenant_a.client.get("/api/v1/memories")
    assert response.status_code == 200
    ids = {row["id"] for row in response.json()["results"]}
    assert ids == {m.pk for m in mine}
    other = tenant_b.client.get("/api/v1/memories").json()["results"]
    assert len(other) == 4
    assert not ids & {row["id"] for row in other}


def test_memory_list_paginates_with_a_cursor(tenant_a):
    MemoryFactory.create_batch(5, tenant=tenant_a.tenant)
    first = tenant_a.client.get("/api/v1/memories?page_size=2").json()
    assert len(first["results"]) == 2
    assert first["next"]
    second = tenant_a.client.get(first["next"]).json()
    assert len(second["results"]) == 2
    assert not {r["id"] for r in first["results"]} & {r["id"] for r in second["results"]}


def test_memory_list_filters_by_user_and_kind_and_hides_superseded(tenant_a):
    keep = MemoryFactory(tenant=tenant_a.tenant, user_id="u1", kind="semantic")
    MemoryFactory(tenant=tenant_a.tenant, user_id="u2", kind="semantic")
    MemoryFactory(tenant=tenant_a.tenant, user_id="u1", kind="episodic")
    MemoryFactory(tenant=tenant_a.tenant, user_id="u1", kind="semantic", status="superseded")
    rows = tenant_a.client.get("/api/v1/memories?user_id=u1&kind=semantic").json()["results"]
    assert [r["id"] for r in rows] == [keep.pk]
    everything = tenant_a.client.get("/api/v1/memories?user_id=u1&kind=semantic&status=any").json()
    assert len(everything["results"]) == 2


def test_memory_list_rejects_a_bad_filter_with_a_field_message(tenant_a):
    response = tenant_a.client.get("/api/v1/memories?kind=dream&created_after=yesterday")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert set(fields) == {"kind", "created_after"}


def test_memory_list_never_exposes_embeddings(tenant_a):
    MemoryFactory(tenant=tenant_a.tenant)
    row = tenant_a.client.get("/api/v1/memories").json()["results"][0]
    assert "embedding" not in row
    assert row["embedding_model"] == "all-MiniLM-L6-v2"


def test_api_key_use_is_recorded(tenant_a):
    from memory_app.models import ApiKey

    tenant_a.client.get("/api/v1/memories")
    key = ApiKey.objects.get(tenant=tenant_a.tenant)
    assert key.last_used_at is not None
    assert key.last_used_at <= timezone.now()


def test_openapi_schema_and_swagger_ui_are_served(anon_client):
    schema = anon_client.get("/api/schema/?format=json")
    assert schema.status_code == 200
    assert "/api/v1/memories" in schema.json()["paths"]
    assert anon_client.get("/api/docs/").status_code == 200
