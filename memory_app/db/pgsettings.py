"""Server settings scoped to a transaction (SET LOCAL) or, for maintenance, to a block.

HNSW's `ef_search` and `iterative_scan` must be set in the transaction that runs the query; set
with `set_config(..., true)` they end with it, so a pooled connection never carries one request's
settings into the next.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connections, transaction

from memory_app.db.queries import Row, execute, fetch_all
from memory_app.db.statements import execute_all
from memory_app.db_routing import read_alias


def hnsw_settings(
    *, ef_search: int, iterative_scan: str = "relaxed_order", max_scan_tuples: int | None = None
) -> dict[str, str]:
    """The settings of an HNSW scan: candidate list size and iterative scan for filtered queries."""
    values = {"hnsw.ef_search": str(int(ef_search)), "hnsw.iterative_scan": iterative_scan}
    if max_scan_tuples is not None:
        values["hnsw.max_scan_tuples"] = str(int(max_scan_tuples))
    return values


def set_local_sql(values: Mapping[str, str]) -> tuple[str, list[Any]]:
    """One statement that sets `values` until the end of the transaction (for `execute_all`, so
    the settings and the query that needs them go in one round trip)."""
    assignments = ", ".join("set_config(%s, %s, true)" for _ in values)
    return f"SELECT {assignments}", [item for pair in values.items() for item in pair]


def set_local(values: Mapping[str, str]) -> None:
    """SET LOCAL `values` in the caller's transaction on the connection reads use now (the read
    block's replica, else the primary); they end with the transaction."""
    alias = read_alias()
    if not connections[alias].in_atomic_block:
        raise RuntimeError("SET LOCAL needs a transaction (transaction.atomic)")
    if values:
        execute(*set_local_sql(values), using=alias)


@contextmanager
def local_settings(values: Mapping[str, str], *, isolate: bool = True) -> Iterator[None]:
    """A block whose queries run with `values` set; the settings never outlive the transaction.

    Outside a transaction the block gets one of its own. Inside a caller's transaction, with
    `isolate` the settings live in a savepoint rolled back afterwards (only reads may happen in
    the block), so the caller's later queries keep their own settings; without it they last until
    the caller's transaction ends (cheaper: no savepoint round trips).
    """
    alias = read_alias()
    outer = connections[alias].in_atomic_block
    with transaction.atomic(using=alias, savepoint=False):
        savepoint = transaction.savepoint(using=alias) if outer and isolate else None
        try:
            set_local(values)
            yield
        finally:
            if savepoint is not None:
                transaction.savepoint_rollback(savepoint, using=alias)


def fetch_all_with(
    values: Mapping[str, str],
    statement: str,
    params: Sequence[Any],
    *,
    isolate: bool = True,
    using: str | None = None,
) -> list[Row]:
    """The rows of one read run with `values` SET LOCAL, in as few round trips as the transaction
    allows. Outside a transaction, or inside one without `isolate`, the settings and the statement
    go together in one round trip: as one implicit transaction whose end ends the settings, or in
    the caller's transaction until it ends (not BEGIN, the settings, the statement, COMMIT). Inside
    a caller's transaction with `isolate`, in a savepoint rolled back afterwards (`local_settings`),
    so the caller's later queries keep their own settings."""
    alias = using or read_alias()
    if isolate and connections[alias].in_atomic_block:
        with local_settings(values):
            return fetch_all(statement, params, using=alias)
    return execute_all([set_local_sql(values), (statement, list(params))], using=alias)


@contextmanager
def session_setting(name: str, value: str) -> Iterator[None]:
    """A session setting for the block, reset afterwards: for statements that cannot run in a
    transaction (CREATE INDEX CONCURRENTLY, REINDEX CONCURRENTLY)."""
    reset = f"RESET {_setting_name(name)}"
    execute("SELECT set_config(%s, %s, false)", [name, value])
    try:
        yield
    finally:
        execute(reset)


def _setting_name(name: str) -> str:
    # RESET takes no parameter: accept only a plain (dotted) setting name.
    if not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"not a setting name: {name!r}")
    return name
