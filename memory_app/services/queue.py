"""Queueing a Celery task by its registered name, so services never import the tasks module (tasks
call services: the dependency points one way). Inline without a broker, as `delay` would."""

from __future__ import annotations

from typing import Any

from project.celery import app


def task_send(name: str, *args: Any) -> None:
    """Queue task `name` with `args`; raises what the broker raises (callers decide what a refusal
    means for them)."""
    app.tasks[name].apply_async(args)
