"""Turning a migrated single-node database into the Citus layout (`manage.py citus_distribute`).

Every table whose rows all belong to one tenant (a NOT NULL `tenant_id`) is distributed by
`tenant_id` and co-located with the memory table, so a tenant's rows of every table sit on one
worker and its queries, joins and transactions run there. Citus requires the distribution
column in every primary key, unique constraint and foreign key among those tables: keys are
widened to start with `tenant_id` (ids come from one sequence, so each stays unique), foreign
keys become composite `(tenant_id, x_id) -> (tenant_id, id)`. Small shared tables read before
the tenant is known, and child tables that have no `tenant_id` column yet, become reference
tables (a copy on every node); tables whose tenant may be NULL stay on the coordinator. The
foreign keys Citus cannot keep (reference -> distributed, -> Django's local tables) are dropped
and reported: the services already check those ids under the tenant's predicate.

Only ever run on a Citus coordinator; nothing here touches a single-node database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

# Read at authentication by key prefix before the tenant is known, or addressed by id from a
# parent row: a copy on every node, so they join any shard locally.
REFERENCE_TABLES = (
    "memory_app_tenant",
    "memory_app_apikey",
    "memory_app_memorychangesource",
    "memory_app_clustermember",
    "memory_app_sessionmessage",
    "memory_app_reindexvector",
    "memory_app_duplicatecluster_changes",
)
ANCHOR = "memory_app_memory"


@dataclass
class Layout:
    distributed: list[str] = field(default_factory=list)
    reference: list[str] = field(default_factory=list)
    local: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    widened: list[str] = field(default_factory=list)
    composite_fks: list[str] = field(default_factory=list)
    dropped_fks: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ForeignKey:
    name: str
    table: str
    target: str
    columns: tuple[str, ...]
    target_columns: tuple[str, ...]
    tail: str  # ON DELETE ... DEFERRABLE ..., as pg_get_constraintdef spells it


def classify(tables: dict[str, bool | None], *, distributed_now: set[str]) -> Layout:
    """tables: name -> whether its tenant_id is NOT NULL (None: no such column)."""
    layout = Layout()
    for name in sorted(tables):
        if name in distributed_now:
            layout.already.append(name)
        elif name in REFERENCE_TABLES:
            layout.reference.append(name)
        elif name.startswith("memory_app_") and tables[name]:
            layout.distributed.append(name)
        elif name.startswith("memory_app_"):
            layout.local.append(name)
    if ANCHOR in layout.distributed:  # the first distributed table sets the co-location group
        layout.distributed.remove(ANCHOR)
        layout.distributed.insert(0, ANCHOR)
    return layout


def _rows(sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return list(cursor.fetchall())


def _run(sql: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql)


def is_citus() -> bool:
    return bool(_rows("SELECT 1 FROM pg_extension WHERE extname = 'citus'"))


def _tables() -> dict[str, bool | None]:
    rows = _rows(
        "SELECT c.relname, a.attnotnull FROM pg_class c "
        "LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped "
        "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')"
    )
    return {str(name): (None if notnull is None else bool(notnull)) for name, notnull in rows}


def _foreign_keys(tables: list[str]) -> list[ForeignKey]:
    rows = _rows(
        "SELECT con.conname, con.conrelid::regclass::text, con.confrelid::regclass::text, "
        "ARRAY(SELECT attname FROM unnest(con.conkey) WITH ORDINALITY k(n, i) "
        "      JOIN pg_attribute ON attrelid = con.conrelid AND attnum = k.n ORDER BY k.i), "
        "ARRAY(SELECT attname FROM unnest(con.confkey) WITH ORDINALITY k(n, i) "
        "      JOIN pg_attribute ON attrelid = con.confrelid AND attnum = k.n ORDER BY k.i), "
        "pg_get_constraintdef(con.oid) "
        "FROM pg_constraint con WHERE con.contype = 'f' "
        "AND (con.conrelid::regclass::text = ANY(%s) OR con.confrelid::regclass::text = ANY(%s))",
        [tables, tables],
    )
    keys = []
    for name, table, target, columns, target_columns, definition in rows:
        tail = str(definition).split(")", 2)[-1].strip()  # after "FOREIGN KEY (..) REFERENCES t(..)"
        keys.append(
            ForeignKey(str(name), str(table), str(target), tuple(columns), tuple(target_columns), tail)
        )
    return keys


def _widen_keys(table: str, layout: Layout) -> None:
    """Primary keys and unique constraints/indexes without tenant_id get it as their first column."""
    q = connection.ops.quote_name
    rows = _rows(
        "SELECT con.conname, con.contype, pg_get_constraintdef(con.oid) FROM pg_constraint con "
        "WHERE con.conrelid = %s::regclass AND con.contype IN ('p', 'u') "
        "AND NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = con.conrelid "
        "                AND attname = 'tenant_id' AND attnum = ANY(con.conkey))",
        [table],
    )
    for name, kind, definition in rows:
        columns = str(definition).split("(", 1)[1].rsplit(")", 1)[0]
        keyword = "PRIMARY KEY" if kind == "p" else "UNIQUE"
        _run(f"ALTER TABLE {q(table)} DROP CONSTRAINT {q(str(name))}")
        _run(f"ALTER TABLE {q(table)} ADD CONSTRAINT {q(str(name))} {keyword} (tenant_id, {columns})")
        layout.widened.append(f"{table}.{name}: ({columns}) -> (tenant_id, {columns})")
    loose = _rows(
        "SELECT i.indexrelid::regclass::text FROM pg_index i WHERE i.indrelid = %s::regclass "
        "AND i.indisunique AND NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conindid = i.indexrelid) "
        "AND NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = i.indrelid "
        "                AND attname = 'tenant_id' AND attnum = ANY(i.indkey))",
        [table],
    )
    if loose:
        raise RuntimeError(f"{table}: unique indexes without tenant_id need a migration first: {loose}")


def _add_foreign_key(key: ForeignKey, columns: tuple[str, ...], target_columns: tuple[str, ...]) -> None:
    q = connection.ops.quote_name
    _run(
        f"ALTER TABLE {q(key.table)} ADD CONSTRAINT {q(key.name)} FOREIGN KEY ({', '.join(columns)}) "
        f"REFERENCES {q(key.target)} ({', '.join(target_columns)}) {key.tail}"
    )


def citus_distribute(*, shard_count: int = 32, dry_run: bool = False) -> Layout:
    """Idempotent: tables Citus already manages are left as they are."""
    if not is_citus():
        raise RuntimeError("the citus extension is not installed in this database (not a Citus coordinator)")
    distributed_now = {
        str(row[0]) for row in _rows("SELECT logicalrelid::regclass::text FROM pg_dist_partition")
    }
    layout = classify(_tables(), distributed_now=distributed_now)
    todo = layout.distributed + layout.reference
    if dry_run or not todo:
        return layout
    q = connection.ops.quote_name
    with transaction.atomic():
        # One connection per worker in this transaction: DDL and the data copy stay serial, and a
        # later reference-table write in the transaction meets no parallel shard access.
        _run("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        keys = _foreign_keys(todo)
        for key in keys:
            _run(f"ALTER TABLE {q(key.table)} DROP CONSTRAINT {q(key.name)}")
        for table in layout.distributed:
            _widen_keys(table, layout)
        for table in layout.reference:
            _run(f"SELECT create_reference_table('{table}')")
        for number, table in enumerate(layout.distributed):
            if number == 0 and ANCHOR not in distributed_now:
                placement = f"shard_count => {int(shard_count)}"  # the co-location group's size
            else:
                placement = (
                    f"colocate_with => '{ANCHOR if ANCHOR in distributed_now else layout.distributed[0]}'"
                )
            _run(f"SELECT create_distributed_table('{table}', 'tenant_id', {placement})")
        distributed = set(layout.distributed) | {t for t in layout.already if t.startswith("memory_app_")}
        reference = set(layout.reference)
        for key in keys:
            described = f"{key.table}({', '.join(key.columns)}) -> {key.target}"
            if key.table in distributed and key.target in distributed:
                _add_foreign_key(key, ("tenant_id", *key.columns), ("tenant_id", *key.target_columns))
                layout.composite_fks.append(described)
            elif key.target in reference and key.table.startswith("memory_app_"):
                # A coordinator table with a key to a reference table becomes a Citus local table.
                _add_foreign_key(key, key.columns, key.target_columns)
            else:
                layout.dropped_fks.append(described)
    return layout
