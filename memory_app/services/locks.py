"""The one place that turns a memory scope into a PostgreSQL advisory-lock key.

The store path and background compaction both change the active rows of a scope (tenant, user,
namespace, kind); each takes `scope_lock` inside its transaction before reading candidates, so a
merge decided by one can never be based on rows the other just retired (no lost or double merges).
`pg_advisory_xact_lock` is released at commit or rollback, so a crash cannot leave it held.
"""

from __future__ import annotations

import hashlib

from django.db import connection


def scope_lock_key(*, tenant_id: int, user_id: str, namespace: str, kind: str) -> int:
    """A stable signed 64-bit key (the type pg_advisory_xact_lock takes) for one scope.

    The same formula as `services.store.scope_lock_key` (tests/test_maintenance_jobs.py checks that
    both give the same key), so the store path and compaction exclude each other.
    """
    raw = "\x1f".join((str(tenant_id), user_id, namespace, kind)).encode()
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big", signed=True)


def scope_lock(*, tenant_id: int, user_id: str, namespace: str, kind: str) -> None:
    """Block until this transaction holds the scope's lock; must run inside `transaction.atomic`."""
    if not connection.in_atomic_block:
        raise RuntimeError("scope_lock must be taken inside a transaction (transaction.atomic)")
    key = scope_lock_key(tenant_id=tenant_id, user_id=user_id, namespace=namespace, kind=kind)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])
