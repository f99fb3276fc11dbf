"""Counts that stop early: a plan choice needs to know "more than N", never the exact size."""

from __future__ import annotations

from collections.abc import Sequence
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
