"""PostgreSQL advisory locks held until the end of the transaction.

`pg_advisory_xact_lock` is released at commit or rollback, so a crash cannot leave one held.
"""

from __future__ import annotations

import hashlib

from django.db import connection

from memory_app.db.queries import execute


def advisory_lock_key(*parts: str | int) -> int:
    """A stable signed 64-bit key (the type pg_advisory_xact_lock takes) for a tuple of names."""
    raw = "\x1f".join(str(part) for part in parts).encode()
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big", signed=True)


def advisory_xact_lock(*keys: int) -> None:
    """Block until this transaction holds every key; must run inside `transaction.atomic`.

    Keys are taken in ascending order, so two transactions wanting overlapping sets cannot deadlock.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("an advisory transaction lock must be taken inside transaction.atomic")
    for key in sorted(set(keys)):
        execute("SELECT pg_advisory_xact_lock(%s)", [key])
