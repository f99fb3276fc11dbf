from __future__ import annotations

import pytest

from memory_app.services.kinds.procedures import procedure_record
from memory_app.services.kinds.sessions import MessageInput, session_append
from memory_app.services.review.queue import review_cluster_create
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db


def test_stats_count_kinds_procedures_sessions_and_review_backlog(tenant_a, tenant_b, settings):
    t = tenant_a.tenant
    a, b = MemoryFactory(tenant=t, session_id="s1"), MemoryFactory(tenant=t)
    MemoryFactory(tenant=t, status="superseded")
    MemoryFactory(tenant=t, user_id="", kind="semantic")
    MemoryFactory(tenant=t, user_id="user-2")
    MemoryFactory(tenant=tenant_b.tenant)
    review_cluster_create(tenant=t, memory_ids=[a.pk, b.pk])
    session_append(tenant=t, session_id="s1", user_id="user-1", messages=[MessageInput("user", "hi")] * 3)
    for score in (1.0, 0.5, 0.6):
        procedure_record(
            tenant=t,
            query="weekly report",
            tool_sequence=["a"],
            execution_time_ms=1,
            success_score=score,
            user_id="user-1",
        )
    procedure_record(
        tenant=t, query="other", tool_sequence=["b"], execution_time_ms=1, success_score=0.1, user_id="user-1"
    )

    body = tenant_a.client.get("/api/v1/stats?user_id=user-1").json()
    assert body["memories"]["episodic"] == {"active": 2, "superseded": 1, "deleted": 0, "total": 3}
    assert body["memories"]["semantic"]["total"] == 0
    assert body["knowledge_base"] == {"active_facts": 1}
    assert body["procedural"]["procedures"] == 2
    assert body["procedural"]["executions"] == 4
    assert body["procedural"]["avg_success_score"] == pytest.approx((1.0 + 0.5 + 0.6 + 0.1) / 4)
    assert body["procedural"]["recommended"] == 1  # 0.7 x 1.3
    assert body["short_term"]["sessions"] == 1 and body["short_term"]["messages"] == 3
    assert body["review_backlog"] == 1

    by_session = tenant_a.client.get("/api/v1/stats?session_id=s1").json()
    assert by_session["memories"]["episodic"]["total"] == 1
    empty = tenant_b.client.get("/api/v1/stats?user_id=user-1").json()
    assert empty["memories"]["episodic"]["total"] == 1  # tenant B's own row only
    assert empty["procedural"]["procedures"] == 0 and empty["review_backlog"] == 0
    assert tenant_b.client.get("/api/v1/stats").json()["memories"]["episodic"]["total"] == 1
