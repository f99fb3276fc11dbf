"""Deletion really forgets: after it, no table of the database holds the user's text."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from memory_app.models import ClusterMember, KeptApartPair, Memory
from memory_app.services.kinds.procedures import procedure_record
from memory_app.services.kinds.sessions import MessageInput, session_append
from memory_app.services.lineage.changes import memory_merge, memory_supersede
from memory_app.services.review.queue import review_cluster_create
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db
MARK = "zebrafinch"  # a word nothing else in the database contains


def tables_containing(needle: str) -> list[str]:
    """Every text, varchar and JSON column of every table, searched for `needle`."""
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT c.table_name, c.column_name FROM information_schema.columns c
            JOIN information_schema.tables t USING (table_schema, table_name)
            WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
              AND c.data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY', 'tsvector')
            """
        )
        columns = cur.fetchall()
        hits = []
        for table, column in columns:
            cur.execute(
                f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE %s',
                [f"%{needle}%"],
            )
            if cur.fetchone()[0]:
                hits.append(f"{table}.{column}")
    return hits


def seed_user(tenant, user_id: str, mark: str) -> None:
    a = MemoryFactory(tenant=tenant, user_id=user_id, text=f"{mark} I like green tea")
    b = MemoryFactory(tenant=tenant, user_id=user_id, text=f"{mark} I enjoy green tea")
    memory_merge(tenant=tenant, memory_ids=[a.pk, b.pk], reason=f"same fact: {mark}")
    old = MemoryFactory(tenant=tenant, user_id=user_id, text=f"{mark} goal weight 80 kg")
    new = MemoryFactory(tenant=tenant, user_id=user_id, text=f"{mark} goal weight 75 kg")
    memory_supersede(tenant=tenant, old_id=old.pk, new_id=new.pk, reason=f"changed {mark}")
    c = MemoryFactory(tenant=tenant, user_id=user_id, text=f"{mark} espresso grinder is broken")
    d = MemoryFactory(tenant=tenant, user_id=user_id, text=f"{mark} espresso machine is broken")
    review_cluster_create(tenant=tenant, memory_ids=[c.pk, d.pk], reason=f"maybe {mark}")
    e = MemoryFactory(tenant=tenant, user_id=user_id, text=f"{mark} espresso cup is chipped")
    KeptApartPair.objects.create(tenant=tenant, memory_low=d, memory_high=e)
    MemoryFactory(tenant=tenant, user_id=user_id, kind="semantic", text=f"{mark} user-scoped fact")
    session_append(
        tenant=tenant,
        session_id=f"{user_id}-s1",
        user_id=user_id,
        messages=[MessageInput("user", f"my {mark} secret"), MessageInput("assistant", f"noted {mark}")],
    )
    procedure_record(
        tenant=tenant,
        query=f"{mark} weekly report",
        tool_sequence=["x"],
        execution_time_ms=1,
        success_score=1,
        user_id=user_id,
    )
    staff = get_user_model().objects.get_or_create(username="staff")[0]
    LogEntry.objects.create(
        user=staff,
        content_type_id=ContentType.objects.get_for_model(Memory).pk,
        object_id=str(c.pk),
        object_repr=str(c),
        action_flag=ADDITION,
        change_message=f"edited {mark}",
    )


def test_deleting_a_user_leaves_no_text_of_theirs_in_any_table(tenant_a, tenant_b):
    seed_user(tenant_a.tenant, "u1", MARK)
    seed_user(tenant_a.tenant, "u2", "otherusermark")
    seed_user(tenant_b.tenant, "u1", "tenantbmark")
    shared = MemoryFactory(tenant=tenant_a.tenant, user_id="", kind="semantic", text="knowledge base fact")
    before = set(tables_containing(MARK))
    for column in (
        "memory_app_memorychangesource.snapshot",
        "memory_app_memorychange.reason",
        "memory_app_duplicatecluster.reason",
        "django_admin_log.object_repr",
        "memory_app_sessionmessage.content",
        "memory_app_procedure.pattern",
    ):
        assert column in before

    # another tenant cannot reach them
    r = tenant_b.client.delete("/api/v1/users/u1/memories")
    assert r.status_code == 200
    assert tables_containing(MARK)
    assert not tables_containing("tenantbmark")

    r = tenant_a.client.delete("/api/v1/users/u1/memories")
    assert r.status_code == 200
    deleted = r.json()["deleted"]
    assert deleted["episodic"] == 8 and deleted["semantic"] == 1
    assert deleted["procedural"] == 1 and deleted["sessions"] == 1 and deleted["messages"] == 2
    assert tables_containing(MARK) == []
    assert not KeptApartPair.objects.filter(tenant=tenant_a.tenant, memory_low__user_id="u1").exists()
    assert not ClusterMember.objects.filter(memory__user_id="u1", memory__tenant=tenant_a.tenant).exists()
    assert tables_containing("otherusermark")  # the other user is untouched
    assert Memory.objects.filter(pk=shared.pk).exists()  # the shared knowledge base stays


def test_kind_flags_choose_what_is_forgotten(tenant_a):
    seed_user(tenant_a.tenant, "u1", MARK)
    r = tenant_a.client.delete("/api/v1/users/u1/memories?episodic=false&semantic=false&short_term=false")
    assert r.json()["deleted"]["procedural"] == 1
    assert r.json()["deleted"]["episodic"] == 0
    assert Memory.objects.filter(user_id="u1").count() == 9
    assert tenant_a.client.delete("/api/v1/users/u1/memories?episodic=maybe").status_code == 400


def test_deleting_a_session_with_its_memories_forgets_their_lineage(tenant_a):
    t = tenant_a.tenant
    old = MemoryFactory(tenant=t, session_id="s9", text=f"{MARK} lives in Paris")
    new = MemoryFactory(tenant=t, session_id="s9", text=f"{MARK} lives in Lyon")
    memory_supersede(tenant=t, old_id=old.pk, new_id=new.pk)
    session_append(tenant=t, session_id="s9", messages=[MessageInput("user", f"{MARK} moved")])
    r = tenant_a.client.delete("/api/v1/sessions/s9?memories=true")
    assert r.status_code == 200
    assert r.json()["deleted"] == {"sessions": 1, "messages": 1, "memories": 2}
    assert tables_containing(MARK) == []


def test_purging_one_memory_forgets_its_text_and_lineage_at_once(tenant_a, tenant_b):
    t = tenant_a.tenant
    old = MemoryFactory(tenant=t, user_id="u1", text=f"{MARK} goal weight 80 kg")
    new = MemoryFactory(tenant=t, user_id="u1", text=f"{MARK} goal weight 75 kg")
    memory_supersede(tenant=t, old_id=old.pk, new_id=new.pk, reason=f"changed {MARK}")
    kept = MemoryFactory(tenant=t, user_id="u1", text="espresso cup is chipped")
    assert "memory_app_memorychangesource.snapshot" in tables_containing(MARK)

    assert tenant_b.client.delete(f"/api/v1/memories/{new.pk}?purge=true").status_code == 404
    assert tenant_a.client.delete(f"/api/v1/memories/{new.pk}?purge=maybe").status_code == 400
    assert tables_containing(MARK)

    assert tenant_a.client.delete(f"/api/v1/memories/{new.pk}?purge=true").status_code == 204
    assert tables_containing(MARK) == []
    assert not Memory.objects.filter(pk__in=[old.pk, new.pk]).exists()
    assert tenant_a.client.get(f"/api/v1/memories/{new.pk}").status_code == 404
    assert tenant_a.client.delete(f"/api/v1/memories/{new.pk}?purge=true").status_code == 404
    assert Memory.objects.filter(pk=kept.pk, status="active").exists()


def test_a_soft_deleted_memory_can_still_be_purged(tenant_a):
    memory = MemoryFactory(tenant=tenant_a.tenant, text=f"{MARK} secret plan")
    assert tenant_a.client.delete(f"/api/v1/memories/{memory.pk}").status_code == 204
    assert tenant_a.client.get(f"/api/v1/memories/{memory.pk}").json()["text"] == f"{MARK} secret plan"
    assert tenant_a.client.delete(f"/api/v1/memories/{memory.pk}?purge=true").status_code == 204
    assert tables_containing(MARK) == []
