"""The SQL Django writes, in the forms Citus routes.

- Bulk inserts as multi-row VALUES: Django 5.2's PostgreSQL backend sends
  `INSERT ... SELECT * FROM UNNEST(...)`, which Citus rejects ("subqueries are not supported
  within INSERT queries"); VALUES rows are routed to each row's shard.
- `Model.save()` rewrites every column, the distribution column too (`SET tenant_id = ...`),
  which Citus refuses ("modifying the partition value of rows is not allowed") although the
  value is the row's own: a row never changes tenant, so the column is left out of UPDATEs.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql.compiler import (
    SQLAggregateCompiler,
    SQLCompiler,
    SQLDeleteCompiler,
)
from django.db.backends.postgresql.compiler import SQLInsertCompiler as PostgresInsertCompiler
from django.db.backends.postgresql.compiler import SQLUpdateCompiler as PostgresUpdateCompiler
from django.db.models.sql.compiler import SQLInsertCompiler as GenericInsertCompiler

__all__ = [
    "SQLAggregateCompiler",
    "SQLCompiler",
    "SQLDeleteCompiler",
    "SQLInsertCompiler",
    "SQLUpdateCompiler",
]

DISTRIBUTION_COLUMN = "tenant_id"


class SQLInsertCompiler(PostgresInsertCompiler):
    def assemble_as_sql(self, fields: Any, value_rows: Any) -> Any:
        return GenericInsertCompiler.assemble_as_sql(self, fields, value_rows)


class SQLUpdateCompiler(PostgresUpdateCompiler):
    def as_sql(self, *args: Any, **kwargs: Any) -> Any:
        query: Any = self.query  # an UpdateQuery; its `values` are (field, model, value) triples
        kept = [value for value in query.values if value[0].column != DISTRIBUTION_COLUMN]
        if kept and len(kept) != len(query.values):
            query.values = kept
        return super().as_sql(*args, **kwargs)
