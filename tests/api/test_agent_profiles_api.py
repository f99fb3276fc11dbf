"""Agent profiles over the API: CRUD of the key's tenant, validated by the admin's typed config, and
read by the store and search paths at once."""

from __future__ import annotations

import pytest

from memory_app.models import AgentProfile
from memory_app.selectors.search.options import profile_overrides as search_overrides

pytestmark = pytest.mark.django_db
URL = "/api/v1/agent-profiles"


def test_a_profile_is_created_read_listed_changed_and_deleted(tenant_a):
    c = tenant_a.client
    body = {"agent_id": "coach", "name": "Coach", "config": {"search": {"mmr": True, "mmr_lambda": 0.4}}}
    created = c.post(URL, body, format="json")
    assert created.status_code == 201
    assert created.json()["config"] == body["config"] and created.json()["created_at"]
    assert c.get(f"{URL}/coach").json()["name"] == "Coach"
    assert [p["agent_id"] for p in c.get(URL).json()["results"]] == ["coach"]
    assert search_overrides(tenant=tenant_a.tenant, agent_id="coach") == {"mmr": True, "mmr_lambda": 0.4}

    changed = c.patch(f"{URL}/coach", {"config": {"store": {"deduplicate": False}}}, format="json")
    assert changed.status_code == 200
    assert changed.json()["config"] == {"store": {"deduplicate": False}}
    assert changed.json()["name"] == "Coach"  # not given: unchanged
    assert search_overrides(tenant=tenant_a.tenant, agent_id="coach") == {}
    assert c.patch(f"{URL}/coach", {"name": "Head coach"}, format="json").json()["config"] == {
        "store": {"deduplicate": False}
    }

    assert c.delete(f"{URL}/coach").status_code == 204
    assert c.get(f"{URL}/coach").status_code == 404
    assert c.delete(f"{URL}/coach").status_code == 404


def test_a_bad_config_is_a_400_naming_the_key_and_stores_nothing(tenant_a):
    c = tenant_a.client
    r = c.post(URL, {"agent_id": "bot", "config": {"search": {"mmr_lambda": 3}, "colour": 1}}, format="json")
    assert r.status_code == 400
    assert r.json()["error"]["fields"]["config"] == [
        "colour: unknown key",
        "search.mmr_lambda: must be between 0 and 1",
    ]
    assert c.post(URL, {"agent_id": "bot", "config": [1]}, format="json").status_code == 400
    assert c.post(URL, {"agent_id": "", "config": {}}, format="json").status_code == 400
    assert c.post(URL, {"agent_id": "bot", "extra": 1}, format="json").status_code == 400
    assert not AgentProfile.objects.exists()
    c.post(URL, {"agent_id": "bot"}, format="json")
    r = c.patch(f"{URL}/bot", {"config": {"store": {"judge": "gpt"}}}, format="json")
    assert r.json()["error"]["fields"]["config"] == ["store.judge: must be one of offline, llm"]
    assert AgentProfile.objects.get(agent_id="bot").config == {}


def test_a_second_profile_for_the_same_agent_is_a_409(tenant_a):
    assert tenant_a.client.post(URL, {"agent_id": "bot"}, format="json").status_code == 201
    r = tenant_a.client.post(URL, {"agent_id": "bot", "name": "again"}, format="json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "conflict"


def test_another_tenant_neither_sees_nor_changes_a_profile(tenant_a, tenant_b):
    tenant_a.client.post(URL, {"agent_id": "bot", "config": {"search": {"mmr": True}}}, format="json")
    b = tenant_b.client
    assert b.get(URL).json()["results"] == []
    assert b.get(f"{URL}/bot").status_code == 404
    assert b.patch(f"{URL}/bot", {"name": "mine"}, format="json").status_code == 404
    assert b.delete(f"{URL}/bot").status_code == 404
    # the same agent id in another tenant is another profile
    assert b.post(URL, {"agent_id": "bot"}, format="json").status_code == 201
    assert AgentProfile.objects.get(tenant=tenant_a.tenant, agent_id="bot").config == {
        "search": {"mmr": True}
    }


def test_profiles_page_with_a_cursor(tenant_a):
    for i in range(3):
        tenant_a.client.post(URL, {"agent_id": f"bot{i}"}, format="json")
    page = tenant_a.client.get(URL, {"page_size": 2}).json()
    assert len(page["results"]) == 2 and page["next"]
    rest = tenant_a.client.get(page["next"].split("testserver", 1)[1]).json()
    assert {p["agent_id"] for p in page["results"] + rest["results"]} == {"bot0", "bot1", "bot2"}
