"""The one place that turns a memory scope into a PostgreSQL advisory-lock key.

The store path, memory edits and deletes, erasure (services/store/forget.py) and background
compaction all change the rows of a scope (tenant, user, namespace, kind); each takes `scope_lock`
inside its transaction before reading candidates or locking rows, so a merge decided by one can
never be based on rows the other just retired (no lost or double merges), and a store can never
link a review cluster or a merge to a row an erasure just removed. The lock itself is
memory_app.db's transaction-scoped advisory lock.
"""

from __future__ import annotations

from collections.abc import Iterable

from memory_app.db import advisory_lock_key, advisory_xact_lock


def scope_lock_key(*, tenant_id: int, user_id: str, namespace: str, kind: str) -> int:
    """A stable signed 64-bit key for one scope."""
    return advisory_lock_key(tenant_id, user_id, namespace, kind)


def scope_lock(*, tenant_id: int, user_id: str, namespace: str, kind: str) -> None:
    """Block until this transaction holds the scope's lock; must run inside `transaction.atomic`."""
    advisory_xact_lock(scope_lock_key(tenant_id=tenant_id, user_id=user_id, namespace=namespace, kind=kind))


def scopes_lock(*, tenant_id: int, scopes: Iterable[tuple[str, str, str]]) -> None:
    """Every (user_id, namespace, kind) scope's lock at once, in the one global order (ascending
    keys) the store path takes its batch's locks in, so erasures and stores cannot deadlock."""
    advisory_xact_lock(
        *(
            scope_lock_key(tenant_id=tenant_id, user_id=user_id, namespace=namespace, kind=kind)
            for user_id, namespace, kind in scopes
        )
    )
