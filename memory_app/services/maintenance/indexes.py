"""Rebuilding the HNSW indexes without blocking reads or writes (REINDEX ... CONCURRENTLY)."""

from __future__ import annotations

from django.db import connection

from memory_app.db import IndexInfo, execute, hnsw_indexes, session_setting

__all__ = ["IndexInfo", "hnsw_indexes", "index_drop_invalid", "index_rebuild"]


def index_rebuild(*, name: str, maintenance_work_mem: str = "") -> None:
    """REINDEX INDEX CONCURRENTLY: builds a new index beside the old one and swaps them, so
    searches and inserts continue. Cannot run inside a transaction."""
    if connection.in_atomic_block:
        raise RuntimeError("REINDEX CONCURRENTLY cannot run inside a transaction")
    known = {index.name for index in hnsw_indexes()}
    if name not in known:
        raise ValueError(f"{name!r} is not an HNSW index of this database")
    statement = f"REINDEX INDEX CONCURRENTLY {connection.ops.quote_name(name)}"
    if not maintenance_work_mem:
        execute(statement)
        return
    with session_setting("maintenance_work_mem", maintenance_work_mem):
        execute(statement)


def index_drop_invalid(*, name: str) -> None:
    """Drop an invalid leftover of an interrupted concurrent rebuild."""
    if connection.in_atomic_block:
        raise RuntimeError("DROP INDEX CONCURRENTLY cannot run inside a transaction")
    if not any(index.name == name and not index.valid for index in hnsw_indexes()):
        raise ValueError(f"{name!r} is not an invalid HNSW index")
    execute(f"DROP INDEX CONCURRENTLY {connection.ops.quote_name(name)}")
