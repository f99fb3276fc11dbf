"""The contract of search: filters shared by candidate generation (SQL) and ranking."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class SearchFilters:
    user_id: str | None = None
    agent_id: str | None = None
    namespace: str | None = None
    session_id: str | None = None
    kind: str | None = None
    topics_any: tuple[str, ...] = ()
    topics_all: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    created_after: datetime | None = None
    created_before: datetime | None = None
    event_after: datetime | None = None
    event_before: datetime | None = None
    min_confidence: float | None = None
    include_superseded: bool = False


@dataclass(frozen=True)
class Candidate:
    """One row found by a candidate generator: vector (cosine distance) or full text (ts_rank)."""

    memory_id: int
    score: float  # cosine distance for vector candidates (lower is closer), ts_rank for full text
    # which plan found it: "exact", "hnsw_iterative", "partial_index", "exact_fallback", "fulltext"
    plan: str = ""
    # Columns of its memory row read by the statement that found it, where the caller named any
    # (a full-text candidate's rank columns and vector): not part of what was found.
    row: tuple[Any, ...] = field(default=(), compare=False, repr=False)
