from __future__ import annotations

import json
from io import StringIO

import pytest
import yaml
from django.core.management import CommandError, call_command

from memory_app.models import Memory

pytestmark = pytest.mark.django_db

FACTS = [
    {
        "text": "Normal resting heart rate is 60-100 bpm",
        "category": "health",
        "fact_type": "range",
        "source": "AHA",
    },
    {"text": "Adults need 7-9 hours of sleep", "category": "sleep", "topics": ["sleep"]},
    "Water boils at 100 degrees Celsius at sea level",
]


def load(tmp_path, tenant, facts, suffix=".json", *extra):
    path = tmp_path / f"facts{suffix}"
    path.write_text(json.dumps(facts) if suffix == ".json" else yaml.safe_dump(facts))
    out = StringIO()
    call_command(
        "load_knowledge", str(path), "--tenant", tenant.slug, "--json", "--apply", *extra, stdout=out
    )
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_facts_load_as_shared_semantic_memories_and_reloading_adds_nothing(tmp_path, tenant_a, tenant_b):
    report = load(tmp_path, tenant_a.tenant, FACTS, ".json", "--batch-size", "2")
    assert report["outcomes"] == {"created": 3}
    rows = Memory.objects.filter(tenant=tenant_a.tenant)
    assert {(m.kind, m.user_id) for m in rows} == {("semantic", "")}
    hr = rows.get(text__startswith="Normal resting")
    assert (hr.category, hr.fact_type, hr.source) == ("health", "range", "AHA")
    again = load(tmp_path, tenant_a.tenant, FACTS, ".yaml")
    assert again["outcomes"].get("created", 0) == 0
    assert rows.filter(status="active").count() == 3
    assert not Memory.objects.filter(tenant=tenant_b.tenant).exists()


def test_knowledge_reaches_every_user_of_the_tenant_through_context(tmp_path, tenant_a, tenant_b):
    load(tmp_path, tenant_a.tenant, FACTS)
    for user in ("u1", "u2"):
        body = tenant_a.client.post(
            "/api/v1/context/all", {"query": "what is a normal heart rate", "user_id": user}, format="json"
        ).json()
        assert body["semantic"]["memories"][0]["text"] == "Normal resting heart rate is 60-100 bpm"
    other = tenant_b.client.post(
        "/api/v1/context/all", {"query": "what is a normal heart rate", "user_id": "u1"}, format="json"
    ).json()
    assert other["semantic"]["count"] == 0


def test_invalid_facts_are_reported_and_the_rest_is_stored(tmp_path, tenant_a):
    report = load(tmp_path, tenant_a.tenant, [*FACTS[:1], {"text": ""}, {"text": "x", "colour": "red"}, 5])
    assert report["outcomes"] == {"created": 1}
    assert [bad["index"] for bad in report["invalid"]] == [1, 2, 3]


def test_a_file_that_is_not_a_list_is_refused(tmp_path, tenant_a):
    path = tmp_path / "facts.yaml"
    path.write_text("just: a mapping\n")
    with pytest.raises(CommandError, match="list of facts"):
        call_command("load_knowledge", str(path), "--tenant", tenant_a.tenant.slug)
    with pytest.raises(CommandError, match="no tenant"):
        call_command("load_knowledge", str(path), "--tenant", "nobody")


def test_without_apply_the_facts_are_checked_and_counted_but_nothing_is_stored(tmp_path, tenant_a):
    path = tmp_path / "facts.json"
    path.write_text(json.dumps([*FACTS[:2], {"text": ""}]))
    out = StringIO()
    call_command("load_knowledge", str(path), "--tenant", tenant_a.tenant.slug, stdout=out)
    assert "3 facts: valid 2; invalid 1" in out.getvalue() and "dry run" in out.getvalue()
    assert not Memory.objects.filter(tenant=tenant_a.tenant).exists()
