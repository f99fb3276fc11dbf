"""Tenants holding every kind the export carries, and a canonical form of an export for comparing two
exports across id spaces."""

from __future__ import annotations

import datetime as dt
from typing import Any

from memory_app.models import AgentProfile, KeptApartPair, Memory, Tenant
from memory_app.services.actors import Actor
from memory_app.services.kinds.procedures import procedure_record
from memory_app.services.kinds.sessions import MessageInput, session_append
from memory_app.services.lineage.changes import memory_change_undo, memory_merge, memory_supersede
from memory_app.services.review.clusters import cluster_keep_apart
from memory_app.services.review.queue import review_cluster_create
from tests.factories import unit_vector
from tests.factories.ops import near, put


def lineage_tenant(tenant: Tenant) -> Tenant:
    """Memories with a merge, a supersede, an undone supersede, a kept-apart pair and a pending cluster."""
    a = put(tenant, "likes green tea", near(1, 0.05, 1), topics=["drinks"], metadata={"src": "chat"})
    b = put(tenant, "User likes green tea", near(1, 0.05, 2), context="said twice")
    c = put(tenant, "BMI goal 23", near(2, 0.05, 1))
    d = put(tenant, "BMI goal 24", near(2, 0.05, 2))
    e = put(tenant, "espresso grinder is broken", near(3, 0.05, 1), user_id="u2")
    f = put(tenant, "espresso machine is broken", near(3, 0.05, 2), user_id="u2")
    g = put(tenant, "walks the dog", unit_vector(50), user_id="u2")
    h = put(tenant, "walks the dog daily", unit_vector(51), user_id="u2")
    Memory.objects.filter(pk=a.pk).update(access_count=3, helpful_count=1)
    merge = memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk], reason="dup", confidence=0.9)
    memory_supersede(tenant=tenant, old_id=c.pk, new_id=d.pk)
    undone = memory_supersede(tenant=tenant, old_id=g.pk, new_id=h.pk)
    memory_change_undo(tenant=tenant, change_id=undone.pk)
    KeptApartPair.objects.create(tenant=tenant, memory_low_id=e.pk, memory_high_id=f.pk)
    cluster = review_cluster_create(
        tenant=tenant, memory_ids=[g.pk, h.pk], verdict="duplicate", confidence=0.5
    )
    assert cluster is not None
    cluster.changes.add(undone)
    assert merge.sources.count() == 2
    return tenant


def whole_tenant(tenant: Tenant) -> Tenant:
    """`lineage_tenant` plus a decided review cluster, procedures, sessions with messages and profiles."""
    lineage_tenant(tenant)
    x = put(tenant, "plays the violin", unit_vector(60), user_id="u3")
    y = put(tenant, "plays the viola", unit_vector(61), user_id="u3")
    decided = review_cluster_create(
        tenant=tenant, memory_ids=[x.pk, y.pk], verdict="distinct", confidence=0.4
    )
    assert decided is not None
    cluster_keep_apart(tenant=tenant, cluster_id=decided.pk, actor=Actor.system())
    for query, tools in (("weekly report", ["aggregate"]), ("plan a hike", ["maps", "weather"])):
        procedure_record(
            tenant=tenant,
            query=query,
            tool_sequence=tools,
            execution_time_ms=12.5,
            success_score=0.9,
            user_id="u1",
        )
    procedure_record(
        tenant=tenant, query="shared lookup", tool_sequence=["kb"], execution_time_ms=3, success_score=1
    )
    when = dt.datetime(2026, 5, 8, 13, 56, tzinfo=dt.UTC)
    for number in range(2):
        session_append(
            tenant=tenant,
            session_id=f"s{number}",
            user_id="u1",
            agent_id="coach",
            messages=[
                MessageInput("user", f"I adopted a cat, number {number}.", when, "Caroline", f"m{number}a"),
                MessageInput("assistant", "Lovely!", when + dt.timedelta(minutes=1)),
            ],
        )
    AgentProfile.objects.create(
        tenant=tenant, agent_id="coach", name="Coach", config={"search": {"mmr": True, "mmr_lambda": 0.4}}
    )
    AgentProfile.objects.create(tenant=tenant, agent_id="scribe", config={"store": {"deduplicate": False}})
    return tenant


def canonical_export(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records with every id replaced by its position and the header's tenant left out, so two exports
    compare across id spaces and tenants."""
    memory_ids = {r["id"]: i for i, r in enumerate(r for r in records if r["type"] == "memory")}
    change_ids = {r["id"]: i for i, r in enumerate(r for r in records if r["type"] == "change")}

    def fix(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: fix(v, k) for k, v in value.items() if k != "tenant_id"}
        if isinstance(value, list):
            return [fix(v, key) for v in value]
        if key == "change_ids" and value is not None:
            return change_ids[value]
        if key in ("id", "memory_id", "result_id", "superseded_by_id", "memory_low_id", "memory_high_id"):
            return None if value is None else memory_ids.get(value, change_ids.get(value))
        return value

    header = {k: v for k, v in records[0].items() if k not in ("tenant", "name")}
    return [header, *(fix(r) for r in records[1:])]
