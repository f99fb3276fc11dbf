"""Liveness is public, fast and says nothing; readiness gives details to staff and API keys only."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
import respx
from django.test import override_settings

from memory_app.embeddings import embed_texts, health
from memory_app.embeddings.breaker import breaker
from memory_app.errors import ApplicationError
from tests.support.celery_live import broker_at

pytestmark = pytest.mark.django_db

DEAD_BROKER = "redis://127.0.0.1:1/0"
READY = "/api/v1/health/ready"


@contextmanager
def broker(url: str) -> Iterator[None]:
    with broker_at(url), override_settings(CELERY_BROKER_URL=url):
        yield


@contextmanager
def silent_broker() -> Iterator[str]:
    """A port that accepts TCP connections and never answers: a hung broker, not a refused one."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"


@pytest.fixture(autouse=True)
def _fresh_provider_record() -> Iterator[None]:
    health.reset()
    breaker.reset()
    yield
    health.reset()
    breaker.reset()


def _timed_get(client, path: str):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    response = client.get(path)
    return response, time.monotonic() - started


def test_liveness_answers_ok_without_a_key_and_without_any_detail(anon_client) -> None:  # type: ignore[no-untyped-def]
    response = anon_client.get("/api/v1/health")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_liveness_stays_fast_and_silent_when_the_broker_is_down(anon_client) -> None:  # type: ignore[no-untyped-def]
    with broker(DEAD_BROKER):
        response, seconds = _timed_get(anon_client, "/api/v1/health")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert b"refused" not in response.content and b"127.0.0.1" not in response.content
    assert seconds < 0.5


def test_readiness_needs_an_api_key_or_a_staff_login(anon_client, client, non_staff) -> None:  # type: ignore[no-untyped-def]
    response = anon_client.get(READY)
    assert response.status_code == 401 and response.json()["error"]["code"] == "not_authenticated"
    client.force_login(non_staff)
    response = client.get(READY)
    assert response.status_code == 403 and response.json()["error"]["code"] == "permission_denied"


def test_readiness_reports_database_broker_and_provider_to_a_tenant(tenant_a) -> None:  # type: ignore[no-untyped-def]
    body = tenant_a.client.get(READY).json()
    assert body["status"] == "ok"
    major, minor = (int(x) for x in body["database"]["pgvector_version"].split(".")[:2])
    assert (major, minor) >= (0, 8) and body["database"]["postgresql_version"]
    assert body["broker"]["status"] == "inline"
    assert body["embedding"]["provider"] == "local" and body["embedding"]["status"] in ("ok", "unknown")


@override_settings(HEALTH_CHECK_TIMEOUT_SECONDS=1.0)  # a refusal takes milliseconds, even on a busy machine
def test_readiness_shows_a_refused_broker_within_its_timeout(
    tenant_a, client, staff_without_permission
) -> None:  # type: ignore[no-untyped-def]
    with broker(DEAD_BROKER):
        response, seconds = _timed_get(tenant_a.client, READY)
        client.force_login(staff_without_permission)
        staff_view = client.get(READY).json()
    assert seconds < 1.5
    body = response.json()
    assert response.status_code == 200 and body["status"] == "degraded"
    assert body["database"]["status"] == "ok"
    assert body["broker"] == {"status": "error", "error": "OperationalError", "ms": body["broker"]["ms"]}
    assert "refused" in staff_view["broker"]["error"].lower()  # staff see the message


def test_readiness_gives_up_on_a_hung_broker_after_the_check_timeout(tenant_a) -> None:  # type: ignore[no-untyped-def]
    with silent_broker() as url, broker(url):
        response, seconds = _timed_get(tenant_a.client, READY)
    assert seconds < 1.5
    assert response.json()["broker"]["status"] in ("timeout", "error")
    assert response.json()["status"] == "degraded"


OPENAI = {
    "EMBEDDING_PROVIDER": "openai",
    "EMBEDDING_MODEL": "text-embedding-3-small",
    "OPENAI_API_KEY": "sk-test",
    "OPENAI_BASE_URL": "http://openai.test/v1",
    "OPENAI_EMBEDDING_BACKOFF_SECONDS": 0.0,
    "OPENAI_EMBEDDING_MAX_RETRIES": 0,
    "EMBEDDING_CACHE_ENABLED": False,
}


@override_settings(**OPENAI)
def test_readiness_reports_a_failing_provider_and_its_open_circuit(tenant_a) -> None:  # type: ignore[no-untyped-def]
    with respx.mock() as api:
        route = api.post("http://openai.test/v1/embeddings").mock(return_value=httpx.Response(500, json={}))
        for attempt in range(3):
            with pytest.raises(ApplicationError):
                embed_texts([f"a note {attempt}"], tenant=None)
    assert route.call_count == 1  # the circuit opened after the first failure; later calls wait on nothing
    body = tenant_a.client.get(READY).json()
    assert body["status"] == "degraded"
    embedding = body["embedding"]
    assert (embedding["status"], embedding["consecutive_failures"]) == ("down", 1)
    assert embedding["circuit"]["state"] == "open" and embedding["circuit"]["retry_in_seconds"] > 0
    assert embedding["last_failure_at"] and embedding["last_failure_reason"]
