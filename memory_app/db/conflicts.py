"""Integrity errors from a concurrent change: what changed, and one retry before a 409.

Under READ COMMITTED a statement can meet a row another transaction removed or wrote after this one
read (a message's session deleted, a unique slot taken). Run again, the operation reads the new state
and usually succeeds (or finds nothing to do); if the same conflict comes back it is answered 409.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.apps import apps
from django.db import IntegrityError

from memory_app.errors import ApplicationError

logger = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
# A Citus coordinator relays a worker's error message but not its diagnostic fields, and the names
# in the message carry the shard's number ("session_tenant_sid_unique_102025"; shard ids start at
# 102008): the names are read from the message, without that suffix.
_NAMED_IN_MESSAGE = re.compile(r'(table|constraint) "([^"]+?)(?:_\d{6,})?"')


def _constraint_table(constraint: str) -> str:
    """The table a named constraint of a model (or a primary key, "<table>_pkey") belongs to."""
    for model in apps.get_models():
        if any(c.name == constraint for c in model._meta.constraints):
            return str(model._meta.db_table)
    return constraint.removesuffix("_pkey") if constraint.endswith("_pkey") else ""


def _broken(exc: BaseException) -> tuple[str, str]:
    """(table, constraint) the integrity error names; empty strings where it names none."""
    diag = getattr(exc.__cause__, "diag", None) or getattr(exc, "diag", None)
    table = getattr(diag, "table_name", None) or ""
    constraint = getattr(diag, "constraint_name", None) or ""
    if diag is not None and not constraint:
        named = dict(_NAMED_IN_MESSAGE.findall(getattr(diag, "message_primary", None) or ""))
        constraint = named.get("constraint", "")
        table = named.get("table") or (_constraint_table(constraint) if constraint else "")
    return table, constraint


def conflict_message(exc: BaseException) -> str:
    """What a conflicting concurrent change was, from the constraint it broke (never row values)."""
    table, constraint = _broken(exc)
    table = table.removeprefix("memory_app_")
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
