"""Read replicas against a real hot standby of the test server (tests/support/hot_standby.py).

The standby streams the primary's WAL, so these tests commit their rows (transactional tests) and
wait until the standby has replayed them. Which server answered is read from the queries each
connection captured.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.db import connections
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIRequestFactory

from memory_app.db_routing import ReadYourWritesMiddleware, read_alias, replica_state, reset_states, run_read
from memory_app.models import Memory
from memory_app.selectors.memories import memory_list
from tests.factories import MemoryFactory, unit_vector
from tests.support.hot_standby import HotStandby, hot_standby_of

ALIAS = "replica_0"
pytestmark = pytest.mark.django_db(transaction=True, databases=["default", ALIAS])


@pytest.fixture(scope="session")
def hot_standby(django_db_setup, django_db_blocker) -> Iterator[HotStandby]:  # type: ignore[no-untyped-def]
    if settings.DATABASE_URL:
        pytest.skip("the hot standby is made from the embedded server (DATABASE_URL is set)")
    from project.database import embedded_server

    standby = hot_standby_of(embedded_server(settings.EMBEDDED_PG_DIR))
    config = dict(connections["default"].settings_dict)  # already names the test database
    config.update(HOST=standby.host, PORT=str(standby.port), TEST={**config["TEST"], "MIRROR": "default"})
    config["OPTIONS"] = {**config.get("OPTIONS", {}), "connect_timeout": 2}
    settings.DATABASES[ALIAS] = config
    connections.settings[ALIAS] = config  # (the same dict as settings.DATABASES once configured)
    try:
        yield standby
    finally:
        connections[ALIAS].close()
        connections.settings.pop(ALIAS, None)
        settings.DATABASES.pop(ALIAS, None)
        standby.remove()


@pytest.fixture
def replica(hot_standby, settings) -> Iterator[HotStandby]:  # type: ignore[no-untyped-def]
    settings.DATABASE_REPLICA_ALIASES = [ALIAS]
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 5.0
    settings.DATABASE_REPLICA_CHECK_SECONDS = 0.0
    reset_states()
    yield hot_standby
    reset_states()


def replayed(standby: HotStandby, timeout: float = 15.0) -> None:
    """Wait until the standby has replayed everything the primary has written so far."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        lsn = cursor.fetchone()[0]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if standby.sql(f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn")[0][0]:
            return
        time.sleep(0.02)
    raise AssertionError(f"the standby did not replay {lsn} within {timeout} s")


def memory_selects(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if "memory_app_memory" in q["sql"]]


def test_list_search_and_stats_are_read_on_the_replica(replica, tenant_a):  # type: ignore[no-untyped-def]
    MemoryFactory(tenant=tenant_a.tenant, text="User keeps bees on the roof", user_id="u1")
    replayed(replica)
    with (
        CaptureQueriesContext(connections["default"]) as primary,
        CaptureQueriesContext(connections[ALIAS]) as standby,
    ):
        listed = tenant_a.client.get("/api/v1/memories", {"user_id": "u1"})
        found = tenant_a.client.post(
            "/api/v1/memories/search", {"query": "bees", "mode": "fulltext", "user_id": "u1"}, format="json"
        )
        stats = tenant_a.client.get("/api/v1/stats", {"user_id": "u1"})
    assert listed.status_code == 200 and [m["text"] for m in listed.json()["results"]] == [
        "User keeps bees on the roof"
    ]
    assert found.status_code == 200 and found.json()["count"] == 1
    assert stats.status_code == 200
    assert memory_selects(standby), "the replica answered no memory query"
    assert not [sql for sql in memory_selects(primary) if sql.lstrip().upper().startswith("SELECT")]


def test_a_store_runs_on_the_primary_only(replica, tenant_a):  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connections[ALIAS]) as standby:
        response = tenant_a.client.post(
            "/api/v1/memories", {"text": "User's cat is called Miso", "user_id": "u1"}, format="json"
        )
    assert response.status_code == 201
    assert standby.captured_queries == []
    assert Memory.objects.using("default").filter(text="User's cat is called Miso").exists()


def test_strong_consistency_reads_the_primary_and_a_bad_value_is_a_400(replica, tenant_a):  # type: ignore[no-untyped-def]
    MemoryFactory(tenant=tenant_a.tenant, text="User plays the cello", user_id="u1")
    replayed(replica)
    with CaptureQueriesContext(connections[ALIAS]) as standby:
        strong = tenant_a.client.get("/api/v1/memories", {"user_id": "u1", "consistency": "strong"})
        searched = tenant_a.client.post(
            "/api/v1/memories/search?consistency=strong",
            {"query": "cello", "mode": "fulltext", "user_id": "u1"},
            format="json",
        )
    assert strong.status_code == 200 and len(strong.json()["results"]) == 1
    assert searched.status_code == 200 and searched.json()["count"] == 1
    assert standby.captured_queries == []
    bad = tenant_a.client.post(
        "/api/v1/memories/search?consistency=latest", {"query": "x", "user_id": "u1"}, format="json"
    )
    assert bad.status_code == 400
    assert "consistency" in bad.json()["error"]["fields"]


def test_a_read_after_a_write_in_the_same_request_sees_the_write(replica, tenant_a):  # type: ignore[no-untyped-def]
    from memory_app.services.store.types import MemoryInput
    from memory_app.services.store.write import memory_store

    replica.pause_replay()  # the replica cannot have the row: only the primary can answer correctly
    try:

        def view(request):  # type: ignore[no-untyped-def]
            memory_store(tenant=tenant_a.tenant, items=[MemoryInput(text="User learns Welsh", user_id="u2")])
            return run_read(
                lambda: (
                    read_alias(),
                    list(memory_list(tenant=tenant_a.tenant).values_list("text", flat=True)),
                )
            )

        alias, texts = ReadYourWritesMiddleware(view)(APIRequestFactory().get("/api/v1/memories"))
    finally:
        replica.resume_replay()
    assert alias == "default"
    assert "User learns Welsh" in texts


def test_a_replica_past_the_lag_limit_is_skipped_and_readiness_shows_its_lag(  # type: ignore[no-untyped-def]
    replica, tenant_a, settings, caplog
):
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 0.2
    replica.pause_replay()
    try:
        MemoryFactory(tenant=tenant_a.tenant, text="User moved to Porto", user_id="u1")
        time.sleep(0.4)  # the write the replica has not replayed is now older than the limit
        with caplog.at_level(logging.INFO, logger="memory_app.db_routing"):
            with CaptureQueriesContext(connections[ALIAS]) as standby:
                listed = tenant_a.client.get("/api/v1/memories", {"user_id": "u1"})
            ready = tenant_a.client.get("/api/v1/health/ready")
    finally:
        replica.resume_replay()
    assert [m["text"] for m in listed.json()["results"]] == ["User moved to Porto"]
    assert not memory_selects(standby)
    (shown,) = ready.json()["database"]["replicas"]
    assert shown["alias"] == ALIAS and shown["status"] == "lagging"
    assert shown["lag_seconds"] > 0.2
    assert ready.json()["status"] == "degraded"
    assert any("replica replica_0 is lagging" in r.getMessage() for r in caplog.records)


def test_readiness_shows_a_caught_up_replica_with_zero_lag(replica, tenant_a):  # type: ignore[no-untyped-def]
    replayed(replica)
    (shown,) = tenant_a.client.get("/api/v1/health/ready").json()["database"]["replicas"]
    assert shown["status"] == "ok"
    assert shown["lag_seconds"] == 0.0


def test_a_standby_stopped_mid_run_falls_back_to_the_primary_with_no_failed_request(  # type: ignore[no-untyped-def]
    replica, tenant_a, settings, caplog
):
    settings.DATABASE_REPLICA_CHECK_SECONDS = 3600.0  # the state measured "ok" below is trusted
    MemoryFactory(tenant=tenant_a.tenant, text="User runs on Sundays", user_id="u1", embedding=unit_vector(3))
    replayed(replica)
    assert replica_state(ALIAS).usable
    first = tenant_a.client.get("/api/v1/memories", {"user_id": "u1"})
    replica.stop()
    try:
        with caplog.at_level(logging.WARNING, logger="memory_app.db_routing"):
            answers = [
                tenant_a.client.get("/api/v1/memories", {"user_id": "u1"}),
                tenant_a.client.post(
                    "/api/v1/memories/search",
                    {"query": "Sundays", "mode": "fulltext", "user_id": "u1"},
                    format="json",
                ),
                tenant_a.client.post(
                    "/api/v1/context/all", {"query": "Sundays", "user_id": "u1"}, format="json"
                ),
                tenant_a.client.get("/api/v1/stats"),
            ]
        ready = tenant_a.client.get("/api/v1/health/ready").json()
    finally:
        replica.start()
    assert first.status_code == 200
    assert [a.status_code for a in answers] == [200, 200, 200, 200]
    assert [m["text"] for m in answers[0].json()["results"]] == ["User runs on Sundays"]
    assert answers[1].json()["count"] == 1
    assert answers[2].json()["errors"] == []
    assert any("answered by the primary" in r.getMessage() for r in caplog.records)
    assert ready["database"]["replicas"][0]["status"] == "down"
