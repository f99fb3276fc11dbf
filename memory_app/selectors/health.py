"""Readiness: database, broker and embedding provider, each checked with a short timeout.

The checks run concurrently on a small shared thread pool and the report waits at most
HEALTH_CHECK_TIMEOUT_SECONDS for all of them, so a dead broker or database costs that long, not a
connection timeout. A check still hanging when the time is up is reported as `timeout`; its thread
finishes in the background (the pool is bounded, so hung checks cannot pile up threads).
Liveness (`/api/v1/health`) uses none of this: it answers from the process alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Protocol

from django.conf import settings
from django.db import connections

from memory_app.db import execute, fetch_one
from memory_app.db_routing import replica_aliases, replicas_report
from memory_app.embeddings.breaker import breaker
from memory_app.embeddings.health import provider_state

logger = logging.getLogger(__name__)

_pool = ThreadPoolExecutor(max_workers=6, thread_name_prefix="health")


def _failure(exc: BaseException, *, detailed: bool) -> dict[str, Any]:
    error = f"{type(exc).__name__}: {exc}" if detailed else type(exc).__name__
    return {"status": "error", "error": error.strip()}


def database_status() -> dict[str, Any]:
    """Run in a pool thread: a connection of its own, closed again (threads own their connections)."""
    try:
        execute("SET statement_timeout = %s", [int(settings.HEALTH_CHECK_TIMEOUT_SECONDS * 1000)])
        row = fetch_one(
            "SELECT current_setting('server_version'), "
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector')"
        )
    finally:
        connections.close_all()
    version, pgvector = row or (None, None)
    return {
        "status": "ok" if pgvector else "error",
        "postgresql_version": version,
        "pgvector_version": pgvector,
        "embedded": not settings.DATABASE_URL,
        **({} if pgvector else {"error": "the pgvector extension is not installed"}),
    }


def replicas_status() -> dict[str, Any]:
    """Run in a pool thread: each read replica's measured lag and state (memory_app/db_routing.py)."""
    try:
        replicas = replicas_report()
    finally:
        connections.close_all()
    usable = all(replica["status"] == "ok" for replica in replicas)
    return {"status": "ok" if usable else "degraded", "replicas": replicas}


class BrokerConnect(Protocol):
    def __call__(self, *, timeout: float) -> None: ...


def broker_status(connect: BrokerConnect) -> dict[str, Any]:
    if not settings.CELERY_BROKER_URL:
        return {"status": "inline", "detail": "no CELERY_BROKER_URL: tasks run inline"}
    connect(timeout=settings.HEALTH_CHECK_TIMEOUT_SECONDS)
    return {"status": "ok"}


def _timed(check: Callable[[], dict[str, Any]], *, detailed: bool) -> Callable[[], dict[str, Any]]:
    def run() -> dict[str, Any]:
        started = time.perf_counter()
        try:
            result = check()
        except Exception as exc:  # the point is to report it, not to raise
            logger.warning("readiness: %s failed: %s", check.__name__, exc)
            result = _failure(exc, detailed=detailed)
        result["ms"] = round((time.perf_counter() - started) * 1000, 1)
        return result

    return run


def readiness_report(*, detailed: bool, broker_connect: BrokerConnect) -> dict[str, Any]:
    """Every dependency's state within HEALTH_CHECK_TIMEOUT_SECONDS; `detailed` (staff) adds the
    error messages, an API key sees the error types only. `broker_connect(timeout=...)` opens a
    broker connection (services/queue.broker_connect): handed in, since only that module touches
    Celery and selectors import no services."""
    budget = settings.HEALTH_CHECK_TIMEOUT_SECONDS

    def broker() -> dict[str, Any]:
        return broker_status(broker_connect)

    broker.__name__ = "broker_status"  # the name readiness logs a failure under
    checks = {"database": database_status, "broker": broker}
    if replica_aliases():
        checks["replicas"] = replicas_status
    futures = {name: _pool.submit(_timed(check, detailed=detailed)) for name, check in checks.items()}
    deadline = time.monotonic() + budget
    report: dict[str, Any] = {}
    for name, future in futures.items():
        try:
            report[name] = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            report[name] = {"status": "timeout", "timeout_seconds": budget, "ms": round(budget * 1000, 1)}
    embedding = provider_state()
    circuit = breaker.state()
    embedding["circuit"] = {
        "state": circuit.state,
        "retry_in_seconds": round(circuit.retry_in_seconds, 1),
    }
    if circuit.state != "closed":
        embedding["status"] = "down"  # calls are refused without reaching the provider
    if not detailed:
        embedding["last_failure_reason"] = embedding["last_failure_reason"].split(":", 1)[0]
    report["embedding"] = embedding
    replicas = report.pop("replicas", None)
    if replicas is not None:
        # A replica down or lagging costs capacity, not answers: reads fall back to the primary.
        report["database"]["replicas"] = replicas.get("replicas", [replicas])
    database_ok = report["database"]["status"] == "ok"
    healthy = (
        database_ok
        and (replicas is None or replicas["status"] == "ok")
        and report["broker"]["status"] in ("ok", "inline")
        and embedding["status"] in ("ok", "unknown")
    )
    report["status"] = "ok" if healthy else ("degraded" if database_ok else "unavailable")
    return report
