"""Plain statements on a Django connection, so no module needs a cursor of its own.

Reads (`fetch_all`, `fetch_one`) run where the current read block runs (a healthy replica inside
`db_routing.run_read`, else the primary); statements that may write (`execute`, `copy_out`) always
run on the primary. `using` overrides either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.postgresql.psycopg_any import register_tzloader
from psycopg import sql as pgsql
from psycopg.pq import Format

from memory_app.db_routing import read_alias

Params = Sequence[Any] | None
SQL = str | pgsql.Composable
Row = tuple[Any, ...]
T = TypeVar("T")


def _text(statement: SQL, cursor: Any) -> str:
    # Django's cursor wrapper expects a string; psycopg composes identifiers safely for it.
    return statement if isinstance(statement, str) else statement.as_string(cursor.cursor)


def fetch_all(statement: SQL, params: Params = None, *, using: str | None = None) -> list[Row]:
    with connections[using or read_alias()].cursor() as cursor:
        cursor.execute(_text(statement, cursor), params)
        return list(cursor.fetchall())


_NEVER_BY_REPETITION = 2**31 - 1
_TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid


class _PreparedCursor(psycopg.Cursor[Row]):
    """A server-side binding cursor whose statements are prepared (Django's connections turn
    psycopg's automatic preparation off: `prepare_threshold` None)."""

    def execute(
        self, query: Any, params: Any = None, *, prepare: bool | None = None, binary: bool | None = None
    ) -> Any:
        return super().execute(query, params, prepare=True, binary=binary)


def fetch_all_prepared(statement: str, params: Params = None, *, using: str | None = None) -> list[Row]:
    """fetch_all for a statement a request runs every time and whose best plan does not depend on
    its values (rows by primary key, a lookup by unique key): prepared on the connection the first
    time, so PostgreSQL reuses one plan (a generic one, once five custom plans cost no less)
    instead of planning it at every run. Planning was more than half of the ~1.4 ms the rows a
    search keeps took (`member_rows`: 30 rows, 0.8 ms prepared). Never for a statement whose plan
    must see a value (BM25's words choose between a scan and an index: selectors/search/lexical.py).
    Through Django's cursor wrapper, so its execute wrappers and error translation see the
    statement as they see fetch_all's. Where Django logs queries (DEBUG, a test capturing them) it
    runs as fetch_all runs it (a prepared run leaves psycopg no query text to log), and so it does
    with DATABASE_PREPARED_STATEMENTS off (behind a pooler that drops prepared statements)."""
    wrapper = connections[using or read_alias()]
    if wrapper.queries_logged or not settings.DATABASE_PREPARED_STATEMENTS:
        return fetch_all(statement, params, using=wrapper.alias)
    # As Django's own cursor() starts: its once-a-request health check, then the connection.
    wrapper.close_if_health_check_failed()
    wrapper.ensure_connection()
    wrapper.validate_thread_sharing()
    connection = wrapper.connection
    if connection.prepare_threshold is None:
        # Django turns psycopg's preparation off (None), which refuses `prepare=True` too. A
        # threshold no statement reaches by repetition turns it on for the statements prepared
        # here only: Django's own cursors bind client-side and are never prepared.
        connection.prepare_threshold = _NEVER_BY_REPETITION
    with wrapper.wrap_database_errors:
        raw = _PreparedCursor(connection)
    _zone_as_django(wrapper, raw)
    # django-stubs type make_cursor's argument as Django's wrapper; it takes the driver's cursor.
    with wrapper.make_cursor(raw) as cursor:  # type: ignore[arg-type]
        cursor.execute(statement, params)
        return list(cursor.fetchall())


def _zone_as_django(wrapper: BaseDatabaseWrapper, cursor: psycopg.Cursor[Row]) -> None:
    """The time zone Django's own cursor reads timestamps in (its backend's create_cursor): the
    connection's loader's, unless the setting changed since the connection opened (USE_TZ or the
    database's TIME_ZONE, in tests), where the cursor gets a loader of its own."""
    loader = cursor.connection.adapters.get_loader(_TIMESTAMPTZ_OID, Format.TEXT)
    if wrapper.timezone != getattr(loader, "timezone", None):
        register_tzloader(wrapper.timezone, cursor)


def fetch_one(statement: SQL, params: Params = None, *, using: str | None = None) -> Row | None:
    with connections[using or read_alias()].cursor() as cursor:
        cursor.execute(_text(statement, cursor), params)
        row = cursor.fetchone()
        return None if row is None else tuple(row)


def execute(statement: SQL, params: Params = None, *, using: str = DEFAULT_DB_ALIAS) -> int:
    """Run one statement; the number of rows it changed (-1 when that has no meaning)."""
    with connections[using].cursor() as cursor:
        cursor.execute(_text(statement, cursor), params)
        return int(cursor.rowcount)


def copy_out(statement: str, params: Params = None, *, using: str = DEFAULT_DB_ALIAS) -> bytes:
    """The whole output of a `COPY (...) TO STDOUT`, through psycopg's cursor under Django's."""
    buffer = bytearray()
    with connections[using].cursor() as cursor, cursor.cursor.copy(statement, params) as copy:
        for chunk in copy:
            buffer += chunk
    return bytes(buffer)


def checked_by_first_statement(read: Callable[[], T], *, aliases: Iterable[str] | None = None) -> T:
    """`read()`, its own first statement on each connection (of `aliases`, else this thread's open
    ones) standing for Django's health check, a `SELECT 1` round trip before it (CONN_HEALTH_CHECKS:
    once per request, and per call on a search's pool thread). On a connection the database dropped
    that statement fails: the dead connection is closed and `read` runs once more, on a new one. So
    `read` must be safe to repeat (it reads, or writes what is idempotent). A statement failing on a
    live connection is raised as it is; a connection inside a transaction keeps Django's check."""
    opened = connections.all(initialized_only=True) if aliases is None else [connections[a] for a in aliases]
    for connection in opened:
        if connection.connection is not None and not connection.in_atomic_block:
            connection.health_check_done = True  # type: ignore[attr-defined]  # Django 4.1+, not in the stubs
    try:
        return read()
    except (OperationalError, InterfaceError):
        if not _closed_dead(opened):
            raise
        return read()


def _closed_dead(opened: Iterable[BaseDatabaseWrapper]) -> bool:
    """Close those of `opened` (outside a transaction) that no longer answer; whether there was one."""
    dead = [c for c in opened if c.connection is not None and not c.in_atomic_block and not c.is_usable()]
    for connection in dead:
        connection.close()
    return bool(dead)
