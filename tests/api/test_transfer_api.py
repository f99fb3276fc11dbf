"""A tenant moves whole: `GET /api/v1/export` streams every kind as versioned JSONL and
`POST /api/v1/import` reads it into the key's tenant, a dry run unless apply=true, idempotent."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_app.models import (
    AgentProfile,
    ConversationSession,
    DuplicateCluster,
    KeptApartPair,
    Memory,
    MemoryChange,
    Procedure,
    SessionMessage,
)
from tests.factories.transfer import canonical_export, whole_tenant

pytestmark = pytest.mark.django_db
JSONL = "application/x-ndjson"
EVERY_KIND = {"memory", "change", "kept_apart", "cluster", "procedure", "session", "agent_profile"}


def export(client: Any) -> list[dict[str, Any]]:
    response = client.get("/api/v1/export")
    assert response.status_code == 200 and response["Content-Type"] == JSONL
    assert response.streaming
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def send(client: Any, records: list[dict[str, Any]], **query: str) -> Any:
    body = "".join(json.dumps(r) + "\n" for r in records)
    url = "/api/v1/import" + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
    return client.generic("POST", url, body, content_type=JSONL)


def counts(tenant: Any) -> dict[str, int]:
    return {
        "memory": Memory.objects.filter(tenant=tenant).count(),
        "change": MemoryChange.objects.filter(tenant=tenant).count(),
        "kept_apart": KeptApartPair.objects.filter(tenant=tenant).count(),
        "cluster": DuplicateCluster.objects.filter(tenant=tenant).count(),
        "procedure": Procedure.objects.filter(tenant=tenant).count(),
        "session": ConversationSession.objects.filter(tenant=tenant).count(),
        "message": SessionMessage.objects.filter(session__tenant=tenant).count(),
        "agent_profile": AgentProfile.objects.filter(tenant=tenant).count(),
    }


def test_export_import_export_is_equal_apart_from_ids_for_every_kind(tenant_a, tenant_b):
    whole_tenant(tenant_a.tenant)
    original = export(tenant_a.client)
    assert original[0] == {**original[0], "type": "header", "format": "agent-memory-export", "version": 2}
    assert {r["type"] for r in original[1:]} == EVERY_KIND

    dry = send(tenant_b.client, original)
    assert dry.status_code == 200 and dry.json()["applied"] is False
    assert dry.json()["imported"] == {
        "memory": 11, "change": 3, "kept_apart": 2, "cluster": 2, "procedure": 3, "session": 2,
        "agent_profile": 2,
    }  # fmt: skip
    assert set(counts(tenant_b.tenant).values()) == {0}  # a dry run writes nothing

    applied = send(tenant_b.client, original, apply="true")
    assert applied.status_code == 200 and applied.json()["applied"] is True
    assert counts(tenant_b.tenant) == counts(tenant_a.tenant)
    again = export(tenant_b.client)
    assert canonical_export(again) == canonical_export(original)
    for kind in EVERY_KIND:
        assert [r for r in canonical_export(again) if r["type"] == kind]  # every kind made the trip
    assert ConversationSession.objects.get(tenant=tenant_b.tenant, session_id="s0").messages.count() == 2
    kept = DuplicateCluster.objects.get(tenant=tenant_b.tenant, status="kept_apart")
    assert kept.resolved_at is not None


def test_a_second_import_skips_everything_it_already_holds(tenant_a, tenant_b):
    whole_tenant(tenant_a.tenant)
    original = export(tenant_a.client)
    send(tenant_b.client, original, apply="true")
    before = counts(tenant_b.tenant)
    second = send(tenant_b.client, original, apply="true").json()
    assert set(second["imported"].values()) == {0}
    assert second["skipped"]["memory"] == 11 and second["skipped"]["session"] == 2
    assert counts(tenant_b.tenant) == before
    # importing into the tenant the file came from adds nothing either
    assert set(send(tenant_a.client, original, apply="true").json()["imported"].values()) == {0}


def test_each_key_exports_only_its_own_tenant_and_imports_only_into_it(tenant_a, tenant_b, anon_client):
    whole_tenant(tenant_a.tenant)
    other = export(tenant_b.client)
    assert [r["type"] for r in other] == ["header"] and other[0]["tenant"] == tenant_b.tenant.slug
    assert anon_client.get("/api/v1/export").status_code == 401
    before = counts(tenant_a.tenant)
    assert send(tenant_b.client, export(tenant_a.client), apply="true").status_code == 200
    assert counts(tenant_a.tenant) == before  # B's import went into B
    assert Memory.objects.filter(tenant=tenant_b.tenant).count() == before["memory"]
    assert anon_client.generic("POST", "/api/v1/import", "", content_type=JSONL).status_code == 401


def test_a_bad_file_is_a_400_naming_the_problem_and_stores_nothing(tenant_a, tenant_b):
    whole_tenant(tenant_a.tenant)
    records = export(tenant_a.client)
    header = records[0]
    assert "not an agent-memory-export" in send(tenant_b.client, records[1:]).json()["error"]["message"]
    bad_profile = {"type": "agent_profile", "agent_id": "x", "name": "", "config": {"mmr": 3}}
    bad_profile |= {"created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00+00:00"}
    r = send(tenant_b.client, [*records, bad_profile], apply="true")
    assert r.status_code == 400 and "agent_profile x: config mmr" in r.json()["error"]["message"]
    wrong = [header, {**next(r for r in records if r["type"] == "session"), "messages": "nope"}]
    assert send(tenant_b.client, wrong, apply="true").status_code == 400
    broken = tenant_b.client.generic("POST", "/api/v1/import?apply=true", "{not json\n", content_type=JSONL)
    assert broken.status_code == 400 and "line 1" in broken.json()["error"]["message"]
    assert send(tenant_b.client, [header], apply="maybe").status_code == 400
    unknown = send(tenant_b.client, [header, {"type": "not_a_kind"}], apply="true")
    assert (
        unknown.status_code == 400
        and "unknown record type 'not_a_kind'" in unknown.json()["error"]["message"]
    )
    assert set(counts(tenant_b.tenant).values()) == {0}
