"""Moving a tenant's shard to another worker while the tenant stores: every acknowledged write is
present and active afterwards, and no request failed (docs/SCALING.md "Moving a tenant")."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import connection
from rest_framework.test import APIClient

from memory_app.models import Memory
from memory_app.models.memory import MemoryStatus


def _coordinator() -> psycopg.Connection:
    s = connection.settings_dict
    return psycopg.connect(
        host=s["HOST"],
        port=s["PORT"],
        user=s["USER"],
        dbname=s["NAME"],
        password=s["PASSWORD"],
        autocommit=True,
    )


def _placement(db: psycopg.Connection, tenant_id: int) -> tuple[int, str, int]:
    row = db.execute(
        "SELECT s.shardid, s.nodename, s.nodeport FROM citus_shards s "
        "WHERE s.shardid = get_shard_id_for_distribution_column('memory_app_memory', %s) LIMIT 1",
        [tenant_id],
    ).fetchone()
    assert row is not None
    return int(row[0]), str(row[1]), int(row[2])


def _move(db: psycopg.Connection, shard: int, source: tuple[str, int], target: tuple[str, int]) -> None:
    db.execute(
        "SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, shard_transfer_mode => 'force_logical')",
        [shard, *source, *target],
    )


@pytest.mark.django_db(transaction=True)
def test_moving_a_tenants_shard_while_it_stores_loses_no_acknowledged_write(tenant_a):
    acknowledged: list[int] = []
    failures: list[str] = []
    stop = threading.Event()

    def store_loop() -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {tenant_a.raw_key}")
        number = 0
        try:
            while not stop.is_set():
                # Distinct facts stored as they come: each acknowledged row must stay active.
                body = {"text": f"Shipment {number} left the warehouse", "user_id": "u1"}
                response = client.post("/api/v1/memories?deduplicate=false", body, format="json")
                if response.status_code in (200, 201):
                    acknowledged.append(response.json()["memory_id"])
                else:
                    failures.append(f"{response.status_code}: {response.content[:300]!r}")
                number += 1
        finally:
            connection.close()

    def wait_for(count: int) -> None:
        deadline = time.monotonic() + 120
        while len(acknowledged) < count and not failures and time.monotonic() < deadline:
            time.sleep(0.05)

    with _coordinator() as db:
        shard, host, port = _placement(db, tenant_a.tenant.pk)
        target = db.execute(
            "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid > 0 AND noderole = 'primary' "
            "AND shouldhaveshards AND nodeport <> %s ORDER BY nodeport LIMIT 1",
            [port],
        ).fetchone()
        assert target is not None, "the cluster needs a second worker"
        loop = threading.Thread(target=store_loop)
        loop.start()
        try:
            wait_for(3)
            before_move = len(acknowledged)
            # Logical replication copies the shard group and follows its changes while writes go on.
            _move(db, shard, (host, port), (str(target[0]), int(target[1])))
            moved_at = len(acknowledged)
            wait_for(moved_at + 3)
        finally:
            stop.set()
            loop.join(timeout=120)
        placed = _placement(db, tenant_a.tenant.pk)[1:]
        if placed != (host, port):  # back where it was: the rest of the suite runs on both workers
            _move(db, shard, placed, (host, port))
        assert placed == (str(target[0]), int(target[1]))

    assert failures == []
    assert moved_at > before_move  # writes were acknowledged while the shard moved
    assert len(acknowledged) >= moved_at + 3
    active = set(
        Memory.objects.filter(tenant=tenant_a.tenant, status=MemoryStatus.ACTIVE).values_list("pk", flat=True)
    )
    assert set(acknowledged) <= active
