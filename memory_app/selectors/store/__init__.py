"""Reads of the write path: `scope_neighbours`, the store-time candidates (neighbours.py),
`memory_tokens_source`, the stored token vectors the judge reads (tokens.py), and the memories
without a fact reading of the current rules (readings.py).

Modules: neighbours, tokens, readings.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet


def id_batches(rows: QuerySet[Any], fields: tuple[str, ...], *, batch_size: int) -> Iterator[list[Any]]:
    """Batches of `fields` (the pk first) of `rows`, in id order; each query starts after the
    last id read, so rows the caller fills meanwhile are not read again."""
    after = 0
    while True:
        batch = list(rows.filter(pk__gt=after).order_by("pk").values_list(*fields)[:batch_size])
        if not batch:
            return
        yield batch
        after = batch[-1][0]
