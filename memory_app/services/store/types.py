"""The contract of the write path (`services.store.memory_store`), shared by the API, extraction,
knowledge loading, import and the evaluation command."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np

from memory_app.models import Memory

Outcome = Literal["created", "merged_into", "superseded", "duplicate_of", "queued_for_review"]


@dataclass(frozen=True)
class MemoryInput:
    text: str
    kind: str = "episodic"
    user_id: str = ""
    agent_id: str = ""
    namespace: str = "default"
    session_id: str = ""
    topics: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    event_type: str = ""
    event_date: datetime | None = None
    context: str = ""
    category: str = ""
    fact_type: str = ""
    source: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    confidence: float | None = None
    pinned: bool = False
    expires_at: datetime | None = None
    # Precomputed vector (benchmarks, import); None → embedded through memory_app.embeddings.
    embedding: np.ndarray | None = None


@dataclass(frozen=True)
class StoreOutcome:
    """What happened to one input. `memory_id` is the row that now holds the input's text
    (the merge result for merged_into, the existing row for duplicate_of)."""

    outcome: Outcome
    memory_id: int
    related_ids: tuple[int, ...] = ()  # the memories merged with, superseded, or queued beside
    change_id: int | None = None
    cluster_id: int | None = None
    relation: str | None = None
    confidence: float | None = None
    # Stored without a vector because the embedding provider failed; a task fills it in.
    embedding_pending: bool = False
    # What did not go as usual for this item (a judge that fell back), for the response's warnings.
    warnings: tuple[str, ...] = ()
    # The row just inserted, for an outcome "created": the answer shows it without reading it back.
    row: Memory | None = field(default=None, compare=False, repr=False)
