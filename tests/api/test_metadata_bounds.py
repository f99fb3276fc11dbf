"""Bounded metadata: size, depth, key count and key length (MEMORY_METADATA_*) on every write path;
lists and searches return metadata unless `fields` trims it."""

from __future__ import annotations

import json

import pytest

from memory_app.api.auth import TenantPrincipal
from memory_app.errors import ApplicationError
from memory_app.mcp.dispatch import call_operation
from memory_app.models import Memory
from memory_app.selectors.transfer import FORMAT, VERSION, memory_fields
from memory_app.services.transfer import memory_import_records

pytestmark = pytest.mark.django_db

URL = "/api/v1/memories"


def _store(client, metadata):  # type: ignore[no-untyped-def]
    return client.post(
        URL, {"text": "User owns a red bike", "user_id": "u1", "metadata": metadata}, format="json"
    )


def test_five_thousand_keys_of_a_kilobyte_are_refused_naming_the_limits_and_nothing_is_stored(tenant_a):
    metadata = {f"key{i}": "x" * 1000 for i in range(5000)}
    response = _store(tenant_a.client, metadata)
    assert response.status_code == 400, response.status_code
    problems = " ".join(response.json()["error"]["fields"]["metadata"])
    assert "MEMORY_METADATA_MAX_BYTES" in problems and "MEMORY_METADATA_MAX_KEYS" in problems
    assert not Memory.objects.filter(tenant=tenant_a.tenant).exists()


@pytest.mark.parametrize(
    ("limit", "value", "metadata"),
    [
        ("MEMORY_METADATA_MAX_BYTES", 300, {"note": "y" * 400}),
        ("MEMORY_METADATA_MAX_DEPTH", 3, {"a": {"b": {"c": {"d": 1}}}}),
        ("MEMORY_METADATA_MAX_KEYS", 4, {"a": 1, "b": 2, "c": {"d": 3, "e": 4}}),
        ("MEMORY_METADATA_MAX_KEY_CHARS", 10, {"k" * 11: 1}),
    ],
)
def test_each_metadata_limit_is_a_400_naming_it(tenant_a, settings, limit, value, metadata):
    setattr(settings, limit, value)
    response = _store(tenant_a.client, metadata)
    assert response.status_code == 400
    assert limit in " ".join(response.json()["error"]["fields"]["metadata"])
    assert not Memory.objects.filter(tenant=tenant_a.tenant).exists()
    setattr(settings, limit, value * 100)
    assert _store(tenant_a.client, metadata).status_code == 201


def test_an_edit_cannot_grow_metadata_past_the_limit(tenant_a, settings):
    settings.MEMORY_METADATA_MAX_KEYS = 3
    memory_id = _store(tenant_a.client, {"a": 1}).json()["memory_id"]
    response = tenant_a.client.patch(
        f"{URL}/{memory_id}", {"metadata": {"a": 1, "b": 2, "c": 3, "d": 4}}, format="json"
    )
    assert response.status_code == 400
    assert "MEMORY_METADATA_MAX_KEYS" in " ".join(response.json()["error"]["fields"]["metadata"])
    assert Memory.objects.get(pk=memory_id).metadata == {"a": 1}


@pytest.fixture
def in_test_transaction(monkeypatch):  # type: ignore[no-untyped-def]
    """MCP operations close old connections around each call, as a request cycle does; inside the
    test's transaction that would close the test's own connection."""
    monkeypatch.setattr("memory_app.mcp.dispatch.close_old_connections", lambda: None)


@pytest.mark.usefixtures("in_test_transaction")
def test_an_mcp_store_with_oversized_metadata_is_refused(tenant_a, settings):
    settings.MEMORY_METADATA_MAX_BYTES = 300
    result = call_operation(
        caller=TenantPrincipal(tenant=tenant_a.tenant, api_key=None),
        method="POST",
        url_name="memory-collection",
        body={"text": "User likes tea", "metadata": {"note": "z" * 500}},
    )
    assert result.status == 400
    assert "MEMORY_METADATA_MAX_BYTES" in json.dumps(result.data)
    assert not Memory.objects.filter(tenant=tenant_a.tenant).exists()


@pytest.mark.usefixtures("in_test_transaction")
def test_an_mcp_call_with_an_overlong_session_id_is_a_400_before_any_query(tenant_a):
    result = call_operation(
        caller=TenantPrincipal(tenant=tenant_a.tenant, api_key=None),
        method="POST",
        url_name="session-messages",
        path_args={"session_id": "s" * 300},
        body={"role": "user", "content": "hello"},
    )
    assert result.status == 400
    assert "session_id" in result.data["error"]["fields"]


def test_an_import_with_oversized_metadata_is_refused(tenant_a, settings):
    settings.MEMORY_METADATA_MAX_KEYS = 2
    record = {name: None for name in memory_fields()}
    record.update(
        type="memory",
        id=1,
        text="User likes tea",
        kind="episodic",
        user_id="u1",
        namespace="default",
        metadata={"a": 1, "b": 2, "c": 3},
        created_at="2026-01-01T00:00:00+00:00",
        updated_at="2026-01-01T00:00:00+00:00",
    )
    header = {"type": "header", "format": FORMAT, "version": VERSION}
    with pytest.raises(ApplicationError) as raised:
        memory_import_records(tenant=tenant_a.tenant, records=[header, record])
    assert "MEMORY_METADATA_MAX_KEYS" in raised.value.message


def test_interactions_store_their_memories_under_the_same_bounds(tenant_a, settings):
    settings.MEMORY_METADATA_MAX_BYTES = 256
    response = tenant_a.client.post(
        "/api/v1/interactions",
        {
            "session_id": "s1",
            "user_id": "u1",
            "messages": [
                {
                    "role": "user",
                    "content": "I adopted a beagle called Rex last spring",
                    "message_id": "m" * 200,
                },
            ],
        },
        format="json",
    )
    assert response.status_code in (200, 201), response.content
    body = response.json()
    assert any("MEMORY_METADATA_MAX_BYTES" in w for w in body["warnings"]), body["warnings"]
    assert not Memory.objects.filter(tenant=tenant_a.tenant).exists()


def test_list_and_search_return_metadata_unless_fields_trims_it(tenant_a):
    memory_id = _store(tenant_a.client, {"source": "crm", "n": 3}).json()["memory_id"]
    full = tenant_a.client.get(f"{URL}?user_id=u1").json()["results"][0]
    assert full["metadata"] == {"source": "crm", "n": 3}
    trimmed = tenant_a.client.get(f"{URL}?user_id=u1&fields=text,created_at").json()["results"][0]
    assert trimmed == {"id": memory_id, "text": "User owns a red bike", "created_at": full["created_at"]}
    bad = tenant_a.client.get(f"{URL}?fields=text,secret")
    assert bad.status_code == 400 and "secret" in json.dumps(bad.json())

    search = {"query": "red bike", "filters": {"user_id": "u1"}}
    hit = tenant_a.client.post(f"{URL}/search", search, format="json").json()["results"][0]
    assert hit["memory"]["metadata"] == {"source": "crm", "n": 3}
    hit = tenant_a.client.post(f"{URL}/search", {**search, "fields": ["text"]}, format="json").json()
    assert hit["results"][0]["memory"] == {"id": memory_id, "text": "User owns a red bike"}
