"""Which shards a statement reaches: the statements the service sends are recorded while an
operation runs, then each one on a distributed table is EXPLAINed on the coordinator, whose plan
names the number of shard tasks it runs ("Task Count: N")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlparse
from django.db import connection

APP = str(Path(__file__).resolve().parents[2] / "memory_app") + "/"
_ROWS = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", re.IGNORECASE)
_TASKS = re.compile(r"Task Count: (\d+)")
_COPY = re.compile(r"^\s*COPY\s*\((.*)\)\s*TO\s+STDOUT.*$", re.IGNORECASE | re.DOTALL)


def distributed_tables() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT logicalrelid::regclass::text FROM pg_dist_partition WHERE partmethod = 'h'")
        return [row[0] for row in cursor.fetchall()]


@contextmanager
def recorded() -> Iterator[list[str]]:
    """The statements (parameters bound) that service code sends meanwhile, one per element."""
    import sys

    statements: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        frame: Any = sys._getframe(1)
        while frame is not None and not frame.f_code.co_filename.startswith(APP):
            frame = frame.f_back
        if frame is not None and isinstance(sql, str) and not many:
            with connection.connection.cursor() as raw:
                bound = raw.mogrify(sql, params) if params else sql
            statements.extend(s for s in sqlparse.split(bound) if s.strip())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield statements


def shard_tasks(statements: list[str]) -> list[tuple[int, str, str]]:
    """(task count, statement, plan) for every recorded statement that reads or writes a distributed table."""
    tables = re.compile(r'\b"?(' + "|".join(map(re.escape, distributed_tables())) + r')"?\b')
    found = []
    with connection.cursor() as cursor:
        for statement in statements:
            copy = _COPY.match(statement)
            query = copy.group(1) if copy else statement
            if not _ROWS.match(query) or not tables.search(query):
                continue
            cursor.execute("SAVEPOINT explain_check")
            cursor.execute("EXPLAIN " + query.rstrip().rstrip(";"))
            plan = "\n".join(row[0] for row in cursor.fetchall())
            cursor.execute("ROLLBACK TO SAVEPOINT explain_check")
            counts = [int(n) for n in _TASKS.findall(plan)]
            found.append((max(counts) if counts else 0, " ".join(query.split()), plan))
    return found


def multi_shard(statements: list[str]) -> list[str]:
    """The statements on distributed tables that reach more than one shard."""
    return [f"{tasks} tasks: {sql[:300]}" for tasks, sql, _ in shard_tasks(statements) if tasks != 1]
