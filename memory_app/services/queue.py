"""Queueing a Celery task by its registered name, so services never import the tasks module (tasks
call services: the dependency points one way). Inline without a broker, as `delay` would.

The one module of memory_app that touches the Celery app (pyproject.toml's import contracts): the
broker check readiness runs and the exception a task's soft time limit raises live here too.
"""

from __future__ import annotations

from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from project.celery import app

__all__ = ["SoftTimeLimitExceeded", "broker_connect", "task_send"]


def task_send(name: str, *args: Any) -> None:
    """Queue task `name` with `args`; raises what the broker raises (callers decide what a refusal
    means for them)."""
    app.tasks[name].apply_async(args)


def broker_connect(*, timeout: float) -> None:
    """Open a connection and a channel to the broker (what talks to it) within `timeout` seconds;
    raises what the broker raises. Readiness runs it (selectors/health.py, handed it by the view)."""
    with app.connection_for_write(connect_timeout=timeout) as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=timeout)
        conn.default_channel  # noqa: B018 - opening a channel is what talks to the broker
