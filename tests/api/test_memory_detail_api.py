"""GET/PATCH/DELETE /memories/{id}, feedback, lineage and undo, each with a tenant that has no access."""

from __future__ import annotations

import pytest

from memory_app.models import Memory, MemoryChange
from memory_app.services.lineage.changes import memory_merge, memory_snapshot, memory_supersede
from tests.factories import MemoryFactory, unit_vector

pytestmark = pytest.mark.django_db


def _url(memory_id: int, tail: str = "") -> str:
    return f"/api/v1/memories/{memory_id}{tail}"


def test_get_returns_the_memory_and_its_lineage_ids(tenant_a, tenant_b):
    old = MemoryFactory(tenant=tenant_a.tenant, text="User's BMI goal is 23")
    new = MemoryFactory(tenant=tenant_a.tenant, text="User's BMI goal is 24")
    memory_supersede(tenant=tenant_a.tenant, old_id=old.pk, new_id=new.pk)
    body = tenant_a.client.get(_url(new.pk)).json()
    assert body["text"] == "User's BMI goal is 24" and body["supersedes"] == [old.pk]
    assert tenant_a.client.get(_url(old.pk)).json()["superseded_by"] == new.pk
    assert tenant_b.client.get(_url(new.pk)).status_code == 404
    assert tenant_a.client.get(_url(10**9)).status_code == 404


def test_patch_changes_metadata_in_place(tenant_a, tenant_b):
    memory = MemoryFactory(tenant=tenant_a.tenant, topics=["old"])
    patch = {
        "topics": ["health", "sleep", "health"],
        "pinned": True,
        "confidence": 0.8,
        "metadata": {"src": "chat"},
    }
    response = tenant_a.client.patch(_url(memory.pk), patch, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == memory.pk
    assert (body["topics"], body["pinned"], body["confidence"], body["metadata"]) == (
        ["health", "sleep"],
        True,
        0.8,
        {"src": "chat"},
    )
    assert tenant_b.client.patch(_url(memory.pk), {"pinned": False}, format="json").status_code == 404
    assert Memory.objects.get(pk=memory.pk).pinned is True


def test_patching_the_text_creates_a_new_version_that_supersedes_the_old(tenant_a):
    memory = MemoryFactory(
        tenant=tenant_a.tenant, text="User lives in Paris", helpful_count=2, topics=["home"]
    )
    response = tenant_a.client.patch(_url(memory.pk), {"text": "User lives in Lyon"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] != memory.pk and body["text"] == "User lives in Lyon"
    assert (body["helpful_count"], body["topics"], body["supersedes"]) == (2, ["home"], [memory.pk])
    old = Memory.objects.get(pk=memory.pk)
    assert (old.status, old.superseded_by_id, old.text) == ("superseded", body["id"], "User lives in Paris")
    assert Memory.objects.get(pk=body["id"]).embedding is not None


def test_a_case_only_text_edit_is_applied_in_place(tenant_a):
    memory = MemoryFactory(tenant=tenant_a.tenant, text="user lives in paris")
    body = tenant_a.client.patch(_url(memory.pk), {"text": "User lives in Paris"}, format="json").json()
    assert body["id"] == memory.pk and body["text"] == "User lives in Paris"


def test_bad_patches_are_400_and_deleted_memories_cannot_be_edited(tenant_a):
    memory = MemoryFactory(tenant=tenant_a.tenant)
    for patch, field in [
        ({"confidence": 2}, "confidence"),
        ({"text": " "}, "text"),
        ({"kind": "semantic"}, "kind"),
    ]:
        response = tenant_a.client.patch(_url(memory.pk), patch, format="json")
        assert response.status_code == 400 and field in response.json()["error"]["fields"]
    assert tenant_a.client.patch(_url(memory.pk), {}, format="json").status_code == 400
    tenant_a.client.delete(_url(memory.pk))
    assert tenant_a.client.patch(_url(memory.pk), {"pinned": True}, format="json").status_code == 409


def test_a_text_edit_onto_another_memorys_text_is_a_409(tenant_a):
    MemoryFactory(tenant=tenant_a.tenant, user_id="u1", text="User likes tea")
    other = MemoryFactory(tenant=tenant_a.tenant, user_id="u1", text="User likes coffee")
    response = tenant_a.client.patch(_url(other.pk), {"text": "User likes tea"}, format="json")
    assert response.status_code == 409
    assert Memory.objects.get(pk=other.pk).status == "active"


def test_delete_is_soft_and_repeatable_and_other_tenants_get_404(tenant_a, tenant_b):
    memory = MemoryFactory(tenant=tenant_a.tenant)
    assert tenant_b.client.delete(_url(memory.pk)).status_code == 404
    assert Memory.objects.get(pk=memory.pk).status == "active"
    assert tenant_a.client.delete(_url(memory.pk)).status_code == 204
    assert tenant_a.client.delete(_url(memory.pk)).status_code == 204
    assert Memory.objects.get(pk=memory.pk).status == "deleted"
    assert tenant_a.client.get(_url(memory.pk)).json()["status"] == "deleted"
    listed = tenant_a.client.get("/api/v1/memories").json()["results"]
    assert memory.pk not in {row["id"] for row in listed}


def test_feedback_moves_confidence_toward_one_or_zero_within_bounds(tenant_a, tenant_b):
    memory = MemoryFactory(tenant=tenant_a.tenant, confidence=0.5)
    helpful = tenant_a.client.post(_url(memory.pk, "/feedback"), {"signal": "helpful"}, format="json").json()
    assert helpful["helpful_count"] == 1 and helpful["confidence"] == pytest.approx(0.55)
    harmful = tenant_a.client.post(_url(memory.pk, "/feedback"), {"signal": "harmful"}, format="json").json()
    assert harmful["harmful_count"] == 1 and harmful["confidence"] == pytest.approx(0.495)
    sure = MemoryFactory(tenant=tenant_a.tenant, confidence=1.0)
    for _ in range(3):
        tenant_a.client.post(_url(sure.pk, "/feedback"), {"signal": "helpful"}, format="json")
    assert Memory.objects.get(pk=sure.pk).confidence == 1.0
    bad = tenant_a.client.post(_url(memory.pk, "/feedback"), {"signal": "meh"}, format="json")
    assert bad.status_code == 400 and "signal" in bad.json()["error"]["fields"]
    assert (
        tenant_b.client.post(_url(memory.pk, "/feedback"), {"signal": "harmful"}, format="json").status_code
        == 404
    )
    assert Memory.objects.get(pk=memory.pk).harmful_count == 1


def test_lineage_shows_merges_recursively_and_the_successor_chain(tenant_a, tenant_b):
    t = tenant_a.tenant
    a, b, c = (
        MemoryFactory(tenant=t, text=x)
        for x in ("User's dog is Rex", "Dog named Rex", "User has dog Rex, a lab")
    )
    first = memory_merge(tenant=t, memory_ids=[a.pk, b.pk])
    second = memory_merge(tenant=t, memory_ids=[first.result_id, c.pk], relation="refine")
    newest = MemoryFactory(tenant=t, text="User's dog Rex died", embedding=unit_vector(99))
    memory_supersede(tenant=t, old_id=second.result_id, new_id=newest.pk)

    tree = tenant_a.client.get(_url(second.result_id, "/lineage")).json()
    [merge] = tree["derived_from"]
    assert merge["change"]["operation"] == "merge" and merge["change"]["relation"] == "refine"
    sources = {s["memory"]["id"]: s for s in merge["sources"]}
    assert set(sources) == {first.result_id, c.pk}
    [inner] = sources[first.result_id]["derived_from"]
    assert {s["memory"]["id"] for s in inner["sources"]} == {a.pk, b.pk}
    assert [s["memory"]["id"] for s in tree["superseded_by"]] == [newest.pk]
    assert tree["superseded_by"][0]["change"]["operation"] == "supersede"

    chain = tenant_a.client.get(_url(a.pk, "/lineage")).json()["superseded_by"]
    assert [s["memory"]["id"] for s in chain] == [first.result_id, second.result_id, newest.pk]
    assert tenant_b.client.get(_url(a.pk, "/lineage")).status_code == 404


def test_undo_restores_the_sources_and_refuses_a_second_undo_or_another_tenant(tenant_a, tenant_b):
    t = tenant_a.tenant
    a, b = MemoryFactory(tenant=t, text="User likes tea"), MemoryFactory(tenant=t, text="User enjoys tea")
    before = {m.pk: memory_snapshot(Memory.objects.get(pk=m.pk)) for m in (a, b)}
    change = memory_merge(tenant=t, memory_ids=[a.pk, b.pk])
    assert tenant_b.client.post(f"/api/v1/merges/{change.pk}/undo").status_code == 404
    response = tenant_a.client.post(f"/api/v1/merges/{change.pk}/undo")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == change.pk and body["source_ids"] == sorted([a.pk, b.pk]) and body["undone_at"]
    assert {m.pk: memory_snapshot(Memory.objects.get(pk=m.pk)) for m in (a, b)} == before
    assert Memory.objects.get(pk=change.result_id).status == "deleted"
    assert tenant_a.client.post(f"/api/v1/merges/{change.pk}/undo").status_code == 409
    assert MemoryChange.objects.get(pk=change.pk).undone_at is not None
    assert tenant_a.client.post("/api/v1/merges/999999/undo").status_code == 404
