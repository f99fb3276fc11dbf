"""The rows a search ranks, read once per candidate as plain tuples.

A search fuses ~200 candidates but returns ten: building their model instances cost more than the
ranking. Each row carries all that ranking, load-time dedup, clustering and MMR read of it: its
age, feedback, text and vector (in pgvector's binary form, a fraction of the cost of parsing the
text form). The full-text candidates' rows are read while the query's vector is still being
computed, the vector candidates' right after the vector search, so the ranking reads no row again;
the similarity of a row found by full text only is computed here from its vector.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory_app.db import fetch_all, halfvec_from_binary
from memory_app.models import Memory, Tenant
from memory_app.selectors.search.candidates import MEMORY_TABLE


@dataclass(frozen=True)
class CandidateRow:
    pk: int
    created_epoch: float  # created_at in seconds since 1970: parsing ~200 timestamps cost ~1.5 ms
    confidence: float
    helpful_count: int
    harmful_count: int
    text: str
    embedding: np.ndarray | None  # None for a row stored while the provider was down


# What ranking reads of a candidate's row (CandidateRow's fields after the id).
CANDIDATE_COLUMNS = (
    "extract(epoch FROM m.created_at)::float8, m.confidence, m.helpful_count, m.harmful_count, "
    "m.text, halfvec_send(m.embedding)"
)


def candidate_row(row: tuple[Any, ...]) -> CandidateRow:
    """A CandidateRow from (id, *CANDIDATE_COLUMNS)."""
    return CandidateRow(row[0], row[1], row[2], row[3], row[4], row[5], halfvec_from_binary(row[6]))


def candidate_rows(*, tenant: Tenant, ids: Iterable[int]) -> dict[int, CandidateRow]:
    """The rows of `ids` that still exist. One array parameter rather than an IN list: the
    statement's text is then the same at every search (psycopg parsed a new 360-placeholder text
    each time)."""
    wanted = list(ids)
    if not wanted:
        return {}
    rows = fetch_all(
        f"SELECT m.id, {CANDIDATE_COLUMNS} FROM {MEMORY_TABLE} m WHERE m.tenant_id = %s AND m.id = ANY(%s)",
        [tenant.pk, wanted],
    )
    return {row[0]: candidate_row(row) for row in rows}


def query_similarities(
    rows: dict[int, CandidateRow], ids: Iterable[int], query_embedding: np.ndarray | None
) -> dict[int, float]:
    """The inner product of each row's vector with the query's (both unit length: the cosine),
    for the rows of `ids` that have a vector."""
    if query_embedding is None:
        return {}
    query = np.asarray(query_embedding, dtype=np.float32)
    found = {}
    for i in ids:
        vector = rows[i].embedding if i in rows else None
        if vector is not None:
            found[i] = float(np.dot(vector, query))
    return found


def _columns(fields: tuple[str, ...] | None) -> str:
    if fields is None:
        return _whole_row_columns()
    by_name = {f.name: str(f.column) for f in Memory._meta.concrete_fields}
    names = {"id", *(by_name[name] for name in fields)}
    return ", ".join(f"m.{name}" for name in sorted(names))


@functools.cache
def _whole_row_columns() -> str:
    """Every column of a returned row but the vector and the tsvector, with what the row replaced."""
    skipped = {"embedding", "search_vector"}
    columns = [f"m.{f.column}" for f in Memory._meta.concrete_fields if f.name not in skipped]
    replaced = (
        # The tenant as a value, not as m.tenant_id: Citus then routes the whole statement to the
        # tenant's one shard (tests/citus/test_single_shard.py).
        f"ARRAY(SELECT r.id FROM {MEMORY_TABLE} r WHERE r.tenant_id = %(tenant)s "
        "AND r.superseded_by_id = m.id ORDER BY r.id) AS supersedes_ids"
    )
    return ", ".join([*columns, replaced])


def hit_rows(*, tenant: Tenant, ids: list[int], fields: tuple[str, ...] | None) -> dict[int, Memory]:
    """The returned entries' rows as model instances: whole but without vectors, with the ids of
    the memories each replaced (`supersedes_ids`, for an API answer), or only `fields`. Raw SQL
    written once: compiling the equivalent queryset cost 1-2 ms a search."""
    sql = (
        f"SELECT {_columns(fields)} FROM {MEMORY_TABLE} m "
        "WHERE m.tenant_id = %(tenant)s AND m.id = ANY(%(ids)s)"
    )
    return {memory.pk: memory for memory in Memory.objects.raw(sql, {"tenant": tenant.pk, "ids": ids})}
