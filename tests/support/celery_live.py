"""A real Celery worker (in a thread of the test process) against Redis, isolated per test run.

Several checkouts run their suites at once against one Redis: every run gets its own queue name,
so no worker consumes another run's tasks. The worker thread opens its own database connection to
the same test database, so tests using it need `transactional_db` (data committed for real).
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
RUN_QUEUE = f"test-{uuid.uuid4().hex[:12]}"


def redis_available() -> bool:
    try:
        with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=1):
            return True
    except OSError:
        return False


@contextmanager
def live_worker() -> Iterator[str]:
    """Point the app at Redis with a queue of this run only and start one worker on it."""
    if not redis_available():
        pytest.skip(f"Redis is not reachable at {REDIS_HOST}:{REDIS_PORT} (needed for the worker tests)")
    from celery.contrib.testing.worker import start_worker

    from project.celery import app

    keys = ("broker_url", "task_always_eager", "task_default_queue", "result_backend", "task_routes")
    saved = {key: app.conf.get(key) for key in keys}
    app.conf.update(
        broker_url=f"redis://{REDIS_HOST}:{REDIS_PORT}/0",
        task_always_eager=False,
        task_default_queue=RUN_QUEUE,
        task_routes={"memory.*": {"queue": RUN_QUEUE}},
        result_backend=f"redis://{REDIS_HOST}:{REDIS_PORT}/0",  # keys are per task id: no clash
    )
    app.__dict__.pop("amqp", None)  # the router and queues are cached from the old configuration
    _forget_backend(app)  # an eager task run earlier may have cached the "no backend" one
    try:
        with start_worker(app, queues=[RUN_QUEUE], perform_ping_check=False, shutdown_timeout=30):
            yield RUN_QUEUE
    finally:
        app.conf.update(saved)
        app.__dict__.pop("amqp", None)
        _forget_backend(app)


@contextmanager
def broker_at(url: str) -> Iterator[Any]:
    """Publish tasks to `url` (no worker): for a broker that is down or refuses connections."""
    from project.celery import app

    saved = {key: app.conf.get(key) for key in ("broker_url", "task_always_eager")}
    app.conf.update(broker_url=url, task_always_eager=False)
    app.__dict__.pop("amqp", None)
    app._pool = None  # the producer pool holds connections to the old broker
    try:
        yield app
    finally:
        if app._pool is not None:
            app._pool.force_close_all()
        app._pool = None
        app.conf.update(saved)
        app.__dict__.pop("amqp", None)


def _forget_backend(app: Any) -> None:
    """Celery caches the result backend per thread on first use (`app._local.backend`)."""
    app._local.__dict__.pop("backend", None)


def wait_for(condition: Callable[[], bool], *, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
