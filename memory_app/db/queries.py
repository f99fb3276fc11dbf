"""Plain statements on a Django connection, so no module needs a cursor of its own.

Reads (`fetch_all`, `fetch_one`) run where the current read block runs (a healthy replica inside
`db_routing.run_read`, else the primary); statements that may write (`execute`, `copy_out`) always
run on the primary. `using` overrides either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from psycopg import sql as pgsql

from memory_app.db_routing import read_alias

Params = Sequence[Any] | None
SQL = str | pgsql.Composable
Row = tuple[Any, ...]


def _text(statement: SQL, cursor: Any) -> str:
    # Django's cursor wrapper expects a string; psycopg composes identifiers safely for it.
    return statement if isinstance(statement, str) else statement.as_string(cursor.cursor)


def fetch_all(statement: SQL, params: Params = None, *, using: str | None = None) -> list[Row]:
    with connections[using or read_alias()].cursor() as cursor:
        cursor.execute(_text(statement, cursor), params)
        return list(cursor.fetchall())


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
