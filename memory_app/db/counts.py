"""Counts that stop early: a plan choice needs to know "more than N", never the exact size."""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from typing import Any

from memory_app.db.queries import fetch_one


def count_up_to(*, table: str, where: str, params: Sequence[Any], limit: int) -> int:
    """Rows of `table` matching `where`, counted up to `limit` (the count stops there).

    On a B-tree prefix the inner scan is index-only, so this costs well under a millisecond even
    for a huge scope. `table` and `where` are the caller's SQL; values go in `params`.
    """
    row = fetch_one(
        f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {where} LIMIT %s) s", [*params, limit]
    )
    return int(row[0]) if row else 0


class LargeScopes:
    """Scopes a capped count found over its cap, remembered per process for `ttl` seconds: a large
    scope stays large, so its count (one round trip) is skipped meanwhile. Small results are never
    remembered: a growing scope must switch plans as soon as it passes the cap. A scope that shrank
    keeps the large-scope plan until its entry expires, slower for a while, never wrong."""

    def __init__(self, *, ttl: float, max_entries: int = 10_000) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._counted: dict[Hashable, float] = {}

    def __contains__(self, key: Hashable) -> bool:
        counted_at = self._counted.get(key)
        return counted_at is not None and time.monotonic() - counted_at < self.ttl

    def add(self, key: Hashable) -> None:
        if len(self._counted) >= self.max_entries and key not in self._counted:
            self._counted.clear()
        self._counted[key] = time.monotonic()

    def clear(self) -> None:
        self._counted.clear()
