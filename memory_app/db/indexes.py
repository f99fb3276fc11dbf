"""What the catalog says about indexes."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS

from memory_app.db.queries import fetch_all, fetch_one


@dataclass(frozen=True)
class IndexInfo:
    name: str
    table: str
    size_bytes: int
    valid: bool


def index_valid(name: str) -> bool | None:
    """None when no index has that name; False while a concurrent build runs or after one failed
    half-way (it leaves an invalid index behind); True when queries can use it."""
    row = fetch_one(
        "SELECT i.indisvalid AND i.indisready FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s",
        [name],
    )
    return None if row is None else bool(row[0])


def hnsw_indexes() -> list[IndexInfo]:
    """Every HNSW index of the current schema, with its size and validity."""
    rows = fetch_all(
        """
        SELECT i.relname, t.relname, pg_relation_size(i.oid), x.indisvalid
        FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid
        JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_am a ON a.oid = i.relam
        WHERE a.amname = 'hnsw' AND i.relnamespace = current_schema()::regnamespace
        ORDER BY i.relname
        """
    )
    return [IndexInfo(name, table, int(size), bool(valid)) for name, table, size, valid in rows]


def column_indexes(table: str, column: str) -> list[tuple[str, str]]:
    """(name, CREATE INDEX statement) of every index of `table` whose keys include `column`, so a
    caller that must drop them (a column type change) can build the same ones again."""
    rows = fetch_all(
        """
        SELECT i.relname, pg_get_indexdef(x.indexrelid)
        FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid
        JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY(x.indkey)
        WHERE x.indrelid = to_regclass(%s) AND a.attname = %s
        ORDER BY i.relname
        """,
        [table, column],
        using=DEFAULT_DB_ALIAS,
    )
    return [(str(name), str(definition)) for name, definition in rows]
