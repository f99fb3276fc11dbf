"""Bulk inserts as multi-row VALUES: Django 5.2's PostgreSQL backend sends
`INSERT ... SELECT * FROM UNNEST(...)`, which Citus rejects ("subqueries are not supported within
INSERT queries"); VALUES rows are routed to each row's shard."""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql.compiler import (
    SQLAggregateCompiler,
    SQLCompiler,
    SQLDeleteCompiler,
    SQLUpdateCompiler,
)
from django.db.backends.postgresql.compiler import SQLInsertCompiler as PostgresInsertCompiler
from django.db.models.sql.compiler import SQLInsertCompiler as GenericInsertCompiler

__all__ = [
    "SQLAggregateCompiler",
    "SQLCompiler",
    "SQLDeleteCompiler",
    "SQLInsertCompiler",
    "SQLUpdateCompiler",
]


class SQLInsertCompiler(PostgresInsertCompiler):
    def assemble_as_sql(self, fields: Any, value_rows: Any) -> Any:
        return GenericInsertCompiler.assemble_as_sql(self, fields, value_rows)
