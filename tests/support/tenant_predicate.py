"""Citus readiness, checked on every statement the suite runs: a query the service sends to a
tenant-owned table must say which tenant (`tenant_id = ...`, `tenant_id IN ...`, or for an INSERT a
`tenant_id` column), so that with `tenant_id` as the distribution column it is routed to one shard.

Every connection gets an execute wrapper (also those opened later, in threads, by live servers).
A statement is checked when the innermost project frame that sent it is service code (`memory_app/`);
the tests' own queries (assertions, factories) are not the service's and are skipped. A violation
fails the test that caused it (at teardown), naming the statement and the code that sent it.

ALLOW lists the code that may address many tenants at once, each with its reason (docs/SCALING.md
says what each becomes on Citus: a multi-shard query, which Citus runs in parallel on every node).
"""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "memory_app") + "/"
THIS = str(Path(__file__).resolve())

# Tables holding a tenant_id column (the distributed tables of the Citus plan).
TENANT_TABLES = (
    "memory_app_memory",
    "memory_app_memorychange",
    "memory_app_duplicatecluster",
    "memory_app_keptapartpair",
    "memory_app_procedure",
    "memory_app_conversationsession",
    "memory_app_embeddingcacheentry",
    "memory_app_embeddingcachestats",
    "memory_app_agentprofile",
    "memory_app_maintenancejob",
    "memory_app_searchscopeindex",
    "memory_app_memorytokens",
)
_TABLE = re.compile(r'\b"?(' + "|".join(TENANT_TABLES) + r')"?(?![\w])')
_PREDICATE = re.compile(r'tenant_id"?\s*(?:=|IN\b|<>|IS\b)', re.IGNORECASE)
# An INSERT target with its tenant_id column (Citus routes the row by that value), and the RETURNING
# list of such an INSERT (a bulk_create's `RETURNING "table"."id"` reads back the rows it routed).
_INSERT_WITH_TENANT = re.compile(r'INSERT\s+INTO\s+"?\w+"?\s*\([^)]*\btenant_id\b[^)]*\)', re.IGNORECASE)
_RETURNING = re.compile(r"\bRETURNING\b.*$", re.IGNORECASE | re.DOTALL)
# Statements about the schema or the server, not about rows.
_NOT_ROWS = re.compile(
    r"^\s*(?:CREATE|DROP|ALTER|REINDEX|ANALYZE|VACUUM|EXPLAIN \(COSTS OFF\) SELECT 1|SET|SHOW|TRUNCATE)\b",
    re.IGNORECASE,
)

# module path (relative to memory_app/) or "module:function" → why it may span tenants
ALLOW: dict[str, str] = {
    "admin/": "the Django admin is the operators' cross-tenant view (lists, filters, dashboard)",
    "selectors/stats/dashboard.py": "the admin dashboard sums every tenant",
    "selectors/stats/ops.py": "`memory_stats`: store-wide sizes and counts for operators",
    "services/maintenance/expiry.py": (
        "the expiry sweep visits every tenant's expired rows through a partial index"
    ),
    "services/store/embedding_backfill.py": "the periodic sweep finds pending vectors in every tenant and "
    "hands them to the fill task as ids (tasks take ids), a batch from any tenants",
    "migrations/": "data migrations rewrite every tenant's rows",
    "services/maintenance/search_indexes.py": (
        "sizes every scope of the table to decide its partial HNSW indexes"
    ),
    "services/maintenance/jobs.py": "job scheduling and stale-claim takeover look at every tenant's jobs",
    "services/maintenance/indexes.py": "rebuilds whole indexes",
    "services/maintenance/reindex.py": (
        "an all-tenant reindex (`reindex` without --tenant) re-embeds every tenant"
    ),
    "management/commands/": "operator commands, some of them all-tenant by design",
    "embeddings/cache/stats.py:_add_entry_hits": "one UPDATE per flush adds the hit counts of every tenant "
    "this process served since the last flush (EMBEDDING_STATS_FLUSH_SECONDS)",
}

# Service modules every request passes through on its way to the code that sends the statement
# (middleware, the read-replica block): the statement is that code's, or Django's own.
PASS_THROUGH = {"db_routing.py", "api/guard.py"}

_violations: dict[str, list[str]] = {}
_current = threading.local()
_lock = threading.Lock()
_test_id: list[str] = [""]


# Statements Django writes for a model instance by its primary key: Model.save(update_fields=...),
# refresh_from_db() and the deletion Collector. On Citus, django-multitenant's TenantModel adds the
# tenant to exactly these (docs/SCALING.md), so they are not the service's to scope.
_INSTANCE_FRAMES = {
    "django/db/models/base.py": {"save_base", "_save_table", "_do_update", "refresh_from_db"},
    "django/db/models/deletion.py": None,  # every function of the Collector
}


def _instance_frame(filename: str, function: str) -> bool:
    for suffix, functions in _INSTANCE_FRAMES.items():
        if filename.endswith(suffix) and (functions is None or function in functions):
            return True
    return False


def _origin() -> list[tuple[str, str]]:
    """The service frames (path relative to memory_app/, function) that sent the statement,
    innermost first; empty for a query the tests, a factory, Django itself or a by-primary-key
    instance operation sent. The allow-list applies to any of them: the admin, a command or a
    sweep may call a selector for every tenant at once."""
    frame = sys._getframe(2)
    frames: list[tuple[str, str]] = []
    while frame is not None:
        filename, function = frame.f_code.co_filename, frame.f_code.co_name
        if _instance_frame(filename, function) and not frames:
            return []
        if filename.startswith(APP) and filename[len(APP) :] not in PASS_THROUGH:
            frames.append((filename[len(APP) :], function))
        elif filename.startswith(str(ROOT / "tests")) and filename != THIS and not frames:
            return []
        frame = frame.f_back  # type: ignore[assignment]
    return frames


def _allowed(module: str, function: str) -> bool:
    return any((module + ":" + function == key) if ":" in key else module.startswith(key) for key in ALLOW)


def statement_is_scoped(sql: str) -> bool:
    """Every statement of `sql` (several are sent at once by db/statements.execute_all) either touches
    no tenant-owned table, inserts with a tenant_id column, or filters on tenant_id."""
    for statement in sql.split(";"):
        if _NOT_ROWS.match(statement):
            continue
        rest = _INSERT_WITH_TENANT.sub("", statement)
        if rest != statement:
            rest = _RETURNING.sub("", rest)
        if _TABLE.search(rest) and not _PREDICATE.search(rest):
            return False
    return True


def _check(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    if isinstance(sql, str) and not getattr(_current, "busy", False) and not statement_is_scoped(sql):
        _current.busy = True
        try:
            origin = _origin()
        finally:
            _current.busy = False
        if origin and not any(_allowed(*frame) for frame in origin):
            with _lock:
                _violations.setdefault(_test_id[0], []).append(
                    f"{origin[0][0]}:{origin[0][1]}: {' '.join(sql.split())[:400]}"
                )
    return execute(sql, params, many, context)


def _install(connection: Any, **_: Any) -> None:
    if _check not in connection.execute_wrappers:
        connection.execute_wrappers.append(_check)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    from django.db import connections
    from django.db.backends.signals import connection_created

    connection_created.connect(_install, weak=False)
    for alias in connections:
        _install(connections[alias])


@pytest.fixture(autouse=True)
def _tenant_predicates(request: pytest.FixtureRequest) -> Any:
    from django.db import connections

    for alias in connections:
        _install(connections[alias])
    _test_id[0] = request.node.nodeid
    yield
    found = _violations.pop(request.node.nodeid, [])
    _test_id[0] = ""
    if found:
        unique = list(dict.fromkeys(found))
        pytest.fail(
            "statements on tenant-owned tables without a tenant_id predicate (Citus would send them "
            "to every shard; add the tenant or, for admin/maintenance code, an ALLOW entry with its "
            "reason in tests/support/tenant_predicate.py):\n  " + "\n  ".join(unique),
            pytrace=False,
        )
