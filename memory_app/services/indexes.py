"""Rebuilding the HNSW indexes without blocking reads or writes (REINDEX ... CONCURRENTLY)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection


@dataclass(frozen=True)
class IndexInfo:
    name: str
    table: str
    size_bytes: int
    valid: bool


def hnsw_indexes() -> list[IndexInfo]:
    """Every HNSW index of the current schema, with its size and validity (a failed concurrent
    rebuild leaves an invalid `*_ccnew` index behind)."""
    with connection.cursor() as cursor:
        cursor.execute(
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
        return [
            IndexInfo(name, table, int(size), bool(valid)) for name, table, size, valid in cursor.fetchall()
        ]


def index_rebuild(*, name: str, maintenance_work_mem: str = "") -> None:
    """REINDEX INDEX CONCURRENTLY: builds a new index beside the old one and swaps them, so
    searches and inserts continue. Cannot run inside a transaction."""
    if connection.in_atomic_block:
        raise RuntimeError("REINDEX CONCURRENTLY cannot run inside a transaction")
    known = {index.name for index in hnsw_indexes()}
    if name not in known:
        raise ValueError(f"{name!r} is not an HNSW index of this database")
    with connection.cursor() as cursor:
        if maintenance_work_mem:
            cursor.execute("SELECT set_config('maintenance_work_mem', %s, false)", [maintenance_work_mem])
        cursor.execute(f"REINDEX INDEX CONCURRENTLY {connection.ops.quote_name(name)}")


def index_drop_invalid(*, name: str) -> None:
    """Drop an invalid leftover of an interrupted concurrent rebuild."""
    if connection.in_atomic_block:
        raise RuntimeError("DROP INDEX CONCURRENTLY cannot run inside a transaction")
    if not any(index.name == name and not index.valid for index in hnsw_indexes()):
        raise ValueError(f"{name!r} is not an invalid HNSW index")
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX CONCURRENTLY {connection.ops.quote_name(name)}")
