"""The rule tests/support/tenant_predicate.py applies to every statement of the suite."""

from __future__ import annotations

import pytest

from tests.support.tenant_predicate import statement_is_scoped


@pytest.mark.parametrize(
    "sql",
    [
        'SELECT "memory_app_memory"."id" FROM "memory_app_memory" WHERE "memory_app_memory"."tenant_id" = %s',
        "UPDATE memory_app_memory SET status = %s WHERE tenant_id = %s AND id = ANY(%s)",
        'INSERT INTO "memory_app_memory" ("tenant_id", "text") VALUES (%s, %s)',
        'SELECT 1 FROM "memory_app_clustermember" WHERE "cluster_id" = %s',
        "CREATE INDEX CONCURRENTLY x ON memory_app_memory USING hnsw (embedding)",
        "UPDATE memory_app_memory SET a = 1 WHERE tenant_id = %s AND id = 1; "
        'INSERT INTO "memory_app_memorychange" ("id", "tenant_id") VALUES (%s, %s)',
    ],
)
def test_statements_naming_their_tenant_pass(sql: str) -> None:
    assert statement_is_scoped(sql)


@pytest.mark.parametrize(
    "sql",
    [
        'SELECT "memory_app_memory"."id" FROM "memory_app_memory" WHERE "memory_app_memory"."id" = %s',
        "UPDATE memory_app_memory SET status = %s WHERE id = ANY(%s)",
        'DELETE FROM "memory_app_procedure" WHERE "memory_app_procedure"."id" IN (%s)',
        # the second statement of a batch lacks the tenant
        'INSERT INTO "memory_app_memory" ("tenant_id") VALUES (%s); '
        "UPDATE memory_app_memory SET a = 1 WHERE id = 2",
        'INSERT INTO "memory_app_memory" ("tenant_id", "text") '
        "SELECT 1, text FROM memory_app_memory WHERE id = 3",
    ],
)
def test_statements_without_their_tenant_fail(sql: str) -> None:
    assert not statement_is_scoped(sql)
