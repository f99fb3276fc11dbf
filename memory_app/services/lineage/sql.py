"""The first round trip of a merge or supersede: lock the sources and reserve the ids it will write,
so that every write can then go in one more round trip (memory_app.db.execute_all)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models.expressions import RawSQL

from memory_app.db import fetch_all, models_from_rows
from memory_app.models import Memory, MemoryChange, Tenant

# Vectors stay in the database: a change needs at most one (the surviving text's), copied there by
# `vector_of`, and parsing every source's 384 floats cost ~0.2 ms each. The locked rows are exactly
# what a snapshot records (services.lineage.memory_snapshot).
VECTOR_COLUMNS = frozenset({"embedding", "search_vector"})
_LOCK_FIELDS = [f for f in Memory._meta.concrete_fields if f.attname not in VECTOR_COLUMNS]


def _lock_sql() -> str:
    memory = Memory._meta.db_table
    columns = ", ".join(f'm."{f.column}"' for f in _LOCK_FIELDS)
    # MATERIALIZED: the CTE runs once, so each nextval is drawn once whatever the row count.
    return f"""
        WITH reserved AS MATERIALIZED (
            SELECT ARRAY(
                       SELECT nextval(pg_get_serial_sequence('{memory}', 'id')) FROM generate_series(1, %s)
                   ) AS memory_ids,
                   nextval(pg_get_serial_sequence('{MemoryChange._meta.db_table}', 'id')) AS change_id
        )
        SELECT {columns}, m.embedding IS NOT NULL, reserved.memory_ids, reserved.change_id
        FROM {memory} m, reserved
        WHERE m.tenant_id = %s AND m.id = ANY(%s)
        ORDER BY m.id
        FOR UPDATE OF m
    """


_LOCK_SQL = _lock_sql()


def lock_and_reserve(
    *, tenant: Tenant, ids: Sequence[int], memory_ids: int = 0
) -> tuple[list[Memory], list[int], int | None]:
    """Lock the tenant's memories `ids` (FOR UPDATE, ordered by id, vectors not loaded) and reserve
    `memory_ids` memory ids and one change id: (rows, memory ids, change id). The ids are None/empty
    when no row matched. Each row carries `has_embedding`.

    Rows are built by `models_from_rows`, as a queryset would, from plain rows."""
    fetched = fetch_all(_LOCK_SQL, [memory_ids, tenant.pk, list(set(ids))])
    if not fetched:
        return [], [], None
    rows = models_from_rows(Memory, _LOCK_FIELDS, fetched)
    width = len(_LOCK_FIELDS)
    for memory, values in zip(rows, fetched, strict=True):
        memory.has_embedding = bool(values[width])
    return rows, [int(i) for i in fetched[0][width + 1]], int(fetched[0][width + 2])


def vector_of(memory_id: int, *, tenant_id: int) -> RawSQL:
    """An INSERT value that copies a stored row's vector inside the database (the merge result keeps
    a source's text, so it keeps that source's vector: nothing to send or parse)."""
    return RawSQL(
        f"(SELECT embedding FROM {Memory._meta.db_table} WHERE tenant_id = %s AND id = %s)",
        [tenant_id, memory_id],
    )
