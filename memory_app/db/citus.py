"""Whether the default database is a Citus coordinator (project/citus_backend sets the flag)."""

from __future__ import annotations

from django.db import connection


def citus_mode() -> bool:
    return bool(getattr(connection.features, "is_citus", False))
