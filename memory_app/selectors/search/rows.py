"""The rows a search ranks, read in two steps as plain tuples.

A search fuses up to twice SEARCH_CANDIDATES candidates but shows ten. Each candidate is read
once, by the statement that found it, with what ranking needs of it (`RANK_COLUMNS`: age and
feedback): the vector statement adds each row's cosine similarity to the query (pgvector's), the
full-text statement each row's vector (`LEXICAL_COLUMNS`), compared with the query's here once
the model has made it (full text runs beside the model, before the query has a vector). Only the
~30 rows the ranking keeps are then read with their text and vector (what load-time dedup,
clustering and MMR compare) and the columns of a hit, in one statement (`member_rows`); the shown
entries' model instances are built from those tuples. Reading every candidate's text and vector
cost a 10 k search ~1.7 ms of the statement, the hits' rows a round trip of their own, and a
second read of BM25's rows ~0.3 ms on a 100 k search's longest path.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Field

from memory_app.db import (
    fetch_all_prepared,
    half_precision,
    halfvec_binary_size,
    halfvec_matrix,
    halfvecs_from_binary,
    models_from_rows,
)
from memory_app.db_routing import read_alias
from memory_app.models import Memory, Tenant
from memory_app.retrieval.fusion import cosine_to
from memory_app.selectors.search.candidates import MEMORY_TABLE
from memory_app.selectors.search.types import Candidate

# The judge's token rows (models.MemoryTokens), which also keep each text's fact reading.
TOKENS_TABLE = "memory_app_memorytokens"


@dataclass(frozen=True)
class CandidateRow:
    pk: int
    created_epoch: float  # created_at in seconds since 1970: parsing ~200 timestamps cost ~1.5 ms
    confidence: float
    helpful_count: int
    harmful_count: int


# What ranking reads of a candidate's row (CandidateRow's fields after the id).
RANK_COLUMNS = (
    "extract(epoch FROM m.created_at)::float8",
    "m.confidence",
    "m.helpful_count",
    "m.harmful_count",
)


def candidate_rows_of(rows: Iterable[Sequence[Any]]) -> dict[int, CandidateRow]:
    """CandidateRows from (id, *RANK_COLUMNS) rows."""
    return {row[0]: CandidateRow(row[0], row[1], row[2], row[3], row[4]) for row in rows}


# What a full-text candidate's statement reads of its row (`Candidate.row`): the rank columns and
# the vector, whose similarity to the query is computed here once the query's vector is there
# (full text runs while the model computes it).
LEXICAL_COLUMNS = (*RANK_COLUMNS, "halfvec_send(m.embedding)")


def lexical_rows(
    candidates: Sequence[Candidate], *, query_embedding: np.ndarray | None
) -> tuple[dict[int, CandidateRow], dict[int, float]]:
    """The rows of full-text candidates read with LEXICAL_COLUMNS, and the cosine similarity to
    the query of each with a vector of the query's width (as pgvector's `<=>` computes it on the
    stored halfvec, in float32)."""
    read = [c for c in candidates if c.row]
    ranked = len(RANK_COLUMNS)
    rows = candidate_rows_of((c.memory_id, *c.row[:ranked]) for c in read)
    if query_embedding is None:
        return rows, {}
    query = half_precision(np.asarray(query_embedding, dtype=np.float32).reshape(1, -1))[0]
    size = halfvec_binary_size(len(query))
    # A row stored while the provider was down has no vector; one of another model's width is
    # not comparable (a reindex is under way): neither gets a similarity, as in the vector half.
    comparable = [c for c in read if c.row[ranked] is not None and len(c.row[ranked]) == size]
    if not comparable:
        return rows, {}
    similarities = cosine_to(query, halfvec_matrix([c.row[ranked] for c in comparable]))
    return rows, dict(zip((c.memory_id for c in comparable), similarities.tolist(), strict=True))


def similarities_of(rows: Iterable[Sequence[Any]]) -> dict[int, float]:
    """{id: 1 - distance} of (id, distance, ...) rows, where the distance is not NULL."""
    return {row[0]: 1.0 - float(row[1]) for row in rows if row[1] is not None}


@dataclass(frozen=True)
class MemberRow:
    """A row the ranking kept: what load-time dedup, clustering and MMR read, and a hit's columns."""

    pk: int
    text: str
    embedding: np.ndarray | None  # None for a row stored while the provider was down
    hit: tuple[Any, ...]  # the columns `_hit_columns` names, for `hits_of`
    fact_reading: str | None  # its token row's fact reading (judge/facts.py), if it has one


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


def member_rows(
    *, tenant: Tenant, ids: Sequence[int], fields: tuple[str, ...] | None
) -> dict[int, MemberRow]:
    """The rows of `ids` that still exist, with text, vector, fact reading and a hit's columns (all
    but the vector and the tsvector, with `supersedes_ids`; or only `fields`), in one statement."""
    if not ids:
        return {}
    columns, _ = _hit_columns(fields)
    # Prepared: the same statement every search, planned once per connection (db.fetch_all_prepared).
    rows = fetch_all_prepared(
        f"SELECT m.id, m.text, halfvec_send(m.embedding), t.fact_reading, {columns} "
        f"FROM {MEMORY_TABLE} m LEFT JOIN {TOKENS_TABLE} t ON t.tenant_id = %s AND t.memory_id = m.id "
        "WHERE m.tenant_id = %s AND m.id = ANY(%s::bigint[])",
        [*([tenant.pk] if fields is None else []), tenant.pk, tenant.pk, list(ids)],
    )
    vectors = halfvecs_from_binary([row[2] for row in rows])
    return {
        row[0]: MemberRow(row[0], row[1], vector, tuple(row[4:]), row[3])
        for row, vector in zip(rows, vectors, strict=True)
    }


def hits_of(members: Sequence[MemberRow], *, fields: tuple[str, ...] | None) -> list[Memory]:
    """The members' model instances, built from their hit columns (`db.models_from_rows`: a
    queryset cost 1-2 ms a search to compile, and `Manager.raw` about 1 ms more to resolve its
    columns), each with `supersedes_ids` when all its fields were read."""
    _, filled = _hit_columns(fields)
    alias = read_alias()
    built = models_from_rows(Memory, filled, [m.hit for m in members], using=alias)
    if fields is None:
        for memory, member in zip(built, members, strict=True):
            memory.supersedes_ids = member.hit[-1]  # type: ignore[attr-defined]
    return built
