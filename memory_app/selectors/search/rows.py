"""The rows a search ranks, read once per candidate as plain tuples.

A search fuses ~200 candidates but returns ten: building their model instances cost more than the
ranking. Each row carries all that ranking, load-time dedup, clustering and MMR read of it: its
age, feedback, text and vector (in pgvector's binary form, a fraction of the cost of parsing the
text form). The vector statement reads its candidates' rows, and the full-text candidates' too
when BM25 finished while the query was embedded (else BM25's thread reads them beside it), so
the ranking reads no row again; the similarity of a row found by full text only is computed here
from its vector.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Field

from memory_app.db import fetch_all, halfvec_from_binary, halfvecs_from_binary, models_from_rows
from memory_app.db_routing import read_alias
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


def candidate_rows_of(rows: Sequence[tuple[Any, ...]]) -> dict[int, CandidateRow]:
    """CandidateRows from (id, *CANDIDATE_COLUMNS) rows, their vectors decoded as one array when
    they are all of one size (a search decodes ~200: one at a time cost ~0.5 ms of the GIL)."""
    raw = [row[6] for row in rows]
    one_size = len({None if value is None else len(value) for value in raw}) == 1
    vectors: list[np.ndarray | None]
    if one_size and raw[0] is not None:
        vectors = list(halfvecs_from_binary(raw))
    else:
        vectors = [halfvec_from_binary(value) for value in raw]
    return {
        row[0]: CandidateRow(row[0], row[1], row[2], row[3], row[4], row[5], vector)
        for row, vector in zip(rows, vectors, strict=True)
    }


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
    return candidate_rows_of(rows)


def query_similarities(
    rows: dict[int, CandidateRow], ids: Iterable[int], query_embedding: np.ndarray | None
) -> dict[int, float]:
    """The inner product of each row's vector with the query's (both unit length: the cosine),
    for the rows of `ids` that have a vector: one product of the stacked rows (a call per row cost
    ~100 rows a search over a millisecond)."""
    if query_embedding is None:
        return {}
    found = [(i, vector) for i in ids if i in rows and (vector := rows[i].embedding) is not None]
    if not found:
        return {}
    products = np.stack([vector for _, vector in found]) @ np.asarray(query_embedding, dtype=np.float32)
    return dict(zip([i for i, _ in found], products.tolist(), strict=True))


@functools.cache
def _hit_columns(names: tuple[str, ...] | None) -> tuple[str, tuple[Field[Any, Any], ...]]:
    """The columns of a hit's row and the fields they fill, in the model's field order: every field
    but the vector and the tsvector, with what the row replaced (None), or `names` and the id."""
    skipped = {"embedding", "search_vector"}
    wanted = None if names is None else {"id", *names}
    fields = tuple(
        f
        for f in Memory._meta.concrete_fields
        if (f.name not in skipped if wanted is None else f.name in wanted)
    )
    columns = ", ".join(f"m.{f.column}" for f in fields)
    if names is None:
        columns += (
            # The tenant as a value, not as m.tenant_id: Citus then routes the whole statement to
            # the tenant's one shard (tests/citus/test_single_shard.py).
            f", ARRAY(SELECT r.id FROM {MEMORY_TABLE} r WHERE r.tenant_id = %s "
            "AND r.superseded_by_id = m.id ORDER BY r.id)"
        )
    return columns, fields


def hit_rows(*, tenant: Tenant, ids: list[int], fields: tuple[str, ...] | None) -> dict[int, Memory]:
    """The returned entries' rows as model instances: whole but without vectors, with the ids of
    the memories each replaced (`supersedes_ids`, for an API answer), or only `fields`. Raw SQL
    written once and rows built by `db.models_from_rows`: a queryset cost 1-2 ms a search to
    compile, and `Manager.raw` about 1 ms more than the statement to resolve its columns."""
    alias = read_alias()
    columns, filled = _hit_columns(fields)
    sql = f"SELECT {columns} FROM {MEMORY_TABLE} m WHERE m.tenant_id = %s AND m.id = ANY(%s)"
    params = [tenant.pk, tenant.pk, ids] if fields is None else [tenant.pk, ids]
    rows = fetch_all(sql, params, using=alias)
    found = {}
    for memory, row in zip(models_from_rows(Memory, filled, rows, using=alias), rows, strict=True):
        if fields is None:
            memory.supersedes_ids = row[-1]  # type: ignore[attr-defined]
        found[memory.pk] = memory
    return found
