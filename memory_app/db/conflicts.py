"""Integrity errors from a concurrent change: what changed, and one retry before a 409.

Under READ COMMITTED a statement can meet a row another transaction removed or wrote after this one
read (a message's session deleted, a unique slot taken). Run again, the operation reads the new state
and usually succeeds (or finds nothing to do); if the same conflict comes back it is answered 409.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import IntegrityError

from memory_app.errors import ApplicationError

logger = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


def conflict_message(exc: BaseException) -> str:
    """What a conflicting concurrent change was, from the constraint it broke (never row values)."""
    diag = getattr(exc.__cause__, "diag", None) or getattr(exc, "diag", None)
    table = (getattr(diag, "table_name", None) or "").removeprefix("memory_app_")
    constraint = getattr(diag, "constraint_name", None) or ""
    where = f" ({constraint} on {table})" if constraint and table else ""
    return (
        "A concurrent change conflicted with this request: a row it refers to was removed, or the "
        f"same row was written, by another request meanwhile{where}; nothing was stored. Read the "
        "current state and retry."
    )


def retry_on_conflict(func: Callable[P, R]) -> Callable[P, R]:
    """Run `func` (itself `transaction.atomic`, so a failed try rolls back to its savepoint) again
    once on an IntegrityError; a second one is an ApplicationError 409 saying what changed."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except IntegrityError as exc:
            logger.info("%s: concurrent change (%s); trying once more", func.__qualname__, exc)
        try:
            return func(*args, **kwargs)
        except IntegrityError as exc:
            raise ApplicationError(conflict_message(exc), code="conflict", status=409) from exc

    return wrapper
