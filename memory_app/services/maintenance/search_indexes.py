"""Per-scope partial HNSW indexes for the very large users and namespaces of a tenant.

A shared HNSW index under a filter matching 2 % of the table finds ~0.74 of the true top 10 even
with iterative scan (docs/PERFORMANCE.md). An index holding only one scope's rows has no filter to
fight, so a scope with at least SEARCH_PARTIAL_INDEX_MIN_ROWS rows gets one. Scopes that shrink
below half that lose theirs (the gap keeps a scope near the threshold from flapping).

Not `@transaction.atomic`, unlike other services: `CREATE INDEX CONCURRENTLY` cannot run inside a
transaction, and a build must not block the writes of a live service. Inside a caller's
transaction (tests) the build is a plain CREATE INDEX.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone
from psycopg import sql

from memory_app.conf import search_config
from memory_app.db import execute, fetch_all, fetch_one, index_valid, session_setting, set_local
from memory_app.models import SearchScopeIndex, Tenant
from memory_app.models.search import ScopeField
from memory_app.selectors.search.candidates import MEMORY_TABLE, forget_indexed_scopes

logger = logging.getLogger(__name__)


@dataclass
class IndexSyncReport:
    created: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def scope_index_name(*, tenant: Tenant, scope_field: str, value: str) -> str:
    digest = hashlib.sha256(value.encode()).hexdigest()[:12]
    return f"memory_hnsw_t{tenant.pk}_{scope_field[0]}_{digest}"


def large_scopes(*, tenant: Tenant, min_rows: int) -> dict[tuple[str, str], int]:
    """Users and namespaces of the tenant holding at least min_rows searchable rows."""
    found: dict[tuple[str, str], int] = {}
    for scope_field in ScopeField.values:
        # scope_field comes from ScopeField, never from input: safe to put into the SQL.
        query = (
            f"SELECT {scope_field}, count(*) FROM {MEMORY_TABLE} WHERE tenant_id = %s "
            f"AND status <> 'deleted' AND embedding IS NOT NULL AND {scope_field} <> '' "
            f"GROUP BY {scope_field} HAVING count(*) >= %s"
        )
        found.update(
            {(scope_field, value): int(rows) for value, rows in fetch_all(query, [tenant.pk, min_rows])}
        )
    return found


def _drop_index(name: str, concurrently: bool) -> None:
    how = sql.SQL("CONCURRENTLY ") if concurrently else sql.SQL("")
    execute(sql.SQL("DROP INDEX {}IF EXISTS {}").format(how, sql.Identifier(name)))


def _create_index(*, tenant: Tenant, scope_field: str, value: str, name: str, concurrently: bool) -> None:
    if index_valid(name) is False:  # a concurrent build that failed half-way leaves an invalid index
        _drop_index(name, concurrently)
    how = sql.SQL("CONCURRENTLY ") if concurrently else sql.SQL("")
    # The predicate is written the way vector_candidates writes its WHERE clause (tenant id as a
    # number, the value as a quoted string), so PostgreSQL proves the query implies it.
    statement = sql.SQL(
        "CREATE INDEX {how}IF NOT EXISTS {name} ON {table} USING hnsw (embedding halfvec_cosine_ops) "
        "WITH (m = 16, ef_construction = 64) WHERE tenant_id = {tenant} AND {column} = {value}"
    ).format(
        how=how,
        name=sql.Identifier(name),
        table=sql.Identifier(MEMORY_TABLE),
        tenant=sql.Literal(int(tenant.pk)),
        column=sql.Identifier(scope_field),
        value=sql.Literal(value),
    )
    memory = f"{search_config().index_build_memory_mb}MB"
    if not concurrently:
        # Inside a transaction: fire the deferred foreign-key checks of rows written earlier in it
        # (CREATE INDEX refuses a table with pending trigger events); the setting ends with it.
        execute("SET CONSTRAINTS ALL IMMEDIATE")
        set_local({"maintenance_work_mem": memory})
        execute(statement)
        return
    with session_setting("maintenance_work_mem", memory):
        execute(statement)


def _table_rows() -> int:
    row = fetch_one("SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE relname = %s", [MEMORY_TABLE])
    return int(row[0]) if row else 0


def search_indexes_sync(
    *, tenant: Tenant, min_rows: int | None = None, dry_run: bool = False
) -> IndexSyncReport:
    """Create the partial HNSW indexes the tenant's large scopes need; drop those no longer needed.

    A scope earns an index with at least `min_rows` rows (SEARCH_PARTIAL_INDEX_MIN_ROWS) unless it
    holds more than SEARCH_PARTIAL_INDEX_MAX_FRACTION of the table: under so loose a filter the
    shared index loses little and a second copy of most of the graph is not worth its size.
    """
    threshold = search_config().partial_index_min_rows if min_rows is None else min_rows
    concurrently = not connection.in_atomic_block
    report = IndexSyncReport()
    scopes = large_scopes(tenant=tenant, min_rows=max(1, threshold // 2))
    ceiling = search_config().partial_index_max_fraction * max(_table_rows(), *scopes.values(), 0)
    existing = {(r.field, r.value): r for r in SearchScopeIndex.objects.filter(tenant=tenant)}
    now = timezone.now()
    for key, entry in list(existing.items()):
        rows = scopes.get(key, 0)
        wanted = threshold // 2 <= rows <= ceiling
        if wanted and index_valid(entry.index_name):
            report.kept.append(entry.index_name)
            if not dry_run:
                SearchScopeIndex.objects.filter(pk=entry.pk).update(rows=rows, checked_at=now)
            continue
        report.dropped.append(entry.index_name)
        if wanted:
            del existing[key]  # its index went missing or invalid: rebuild it below
        if not dry_run:
            # Registry first: the planner stops counting on the index before it disappears.
            entry.delete()
            _drop_index(entry.index_name, concurrently)
    for (scope_field, value), rows in sorted(scopes.items()):
        if not threshold <= rows <= ceiling or (scope_field, value) in existing:
            continue
        name = scope_index_name(tenant=tenant, scope_field=scope_field, value=value)
        report.created.append(name)
        if dry_run:
            continue
        logger.info("building partial HNSW index %s for %s=%r (%d rows)", name, scope_field, value, rows)
        _create_index(
            tenant=tenant, scope_field=scope_field, value=value, name=name, concurrently=concurrently
        )
        SearchScopeIndex.objects.update_or_create(
            tenant=tenant,
            field=scope_field,
            value=value,
            defaults={"index_name": name, "rows": rows, "checked_at": now},
        )
    forget_indexed_scopes()
    return report
