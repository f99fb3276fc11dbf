"""The one place that turns a memory scope into a PostgreSQL advisory-lock key.

The store path, memory edits and background compaction all change the active rows of a scope
(tenant, user, namespace, kind); each takes `scope_lock` inside its transaction before reading
candidates, so a merge decided by one can never be based on rows the other just retired (no lost
or double merges). The lock itself is memory_app.db's transaction-scoped advisory lock.
"""

from __future__ import annotations

from memory_app.db import advisory_lock_key, advisory_xact_lock


def scope_lock_key(*, tenant_id: int, user_id: str, namespace: str, kind: str) -> int:
    """A stable signed 64-bit key for one scope."""
    return advisory_lock_key(tenant_id, user_id, namespace, kind)


def scope_lock(*, tenant_id: int, user_id: str, namespace: str, kind: str) -> None:
    """Block until this transaction holds the scope's lock; must run inside `transaction.atomic`."""
    advisory_xact_lock(scope_lock_key(tenant_id=tenant_id, user_id=user_id, namespace=namespace, kind=kind))
