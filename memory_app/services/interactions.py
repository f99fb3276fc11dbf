"""store_interaction: one agent turn into all kinds of memory.

The user message and the assistant's reply go to short-term memory first (that write is never
dropped); memories extracted from the exchange go through the dedup write path (memory_store); the
tool sequence, time and success go to procedural memory. A failing extraction, store or procedure
record is reported in `warnings` and does not undo the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from memory_app.errors import ApplicationError
from memory_app.extraction import extract_memories
from memory_app.models import ConversationSession, Procedure, Tenant
from memory_app.services.procedures import procedure_record
from memory_app.services.sessions import MessageInput, session_append
from memory_app.services.store_types import MemoryInput, StoreOutcome

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class InteractionInput:
    session_id: str
    user_message: str
    assistant_message: str = ""
    user_id: str = ""
    agent_id: str = ""
    namespace: str = "default"
    extract: bool = True
    query: str = ""  # the pattern for procedural memory; the user message when empty
    tool_sequence: Sequence[str] = ()
    execution_time_ms: float | None = None
    success_score: float | None = None


@dataclass
class InteractionResult:
    session: ConversationSession
    trimmed_now: int
    extraction_method: str | None = None
    memories: list[dict[str, Any]] = field(default_factory=list)
    procedure: Procedure | None = None
    warnings: list[str] = field(default_factory=list)


def _store_extracted(tenant: Tenant, data: InteractionInput, result: InteractionResult) -> None:
    from memory_app.services.store import memory_store

    extraction = extract_memories(data.user_message, data.assistant_message)
    result.extraction_method = extraction.method
    result.warnings.extend(extraction.warnings)
    if not extraction.memories:
        return
    items = [
        MemoryInput(
            text=m.text,
            # Semantic facts a user states stay in that user's scope: one user's claim must not become
            # the tenant's shared knowledge base.
            kind=m.kind,
            user_id=data.user_id,
            agent_id=data.agent_id,
            namespace=data.namespace,
            session_id=data.session_id,
            topics=m.topics,
            entities=m.entities,
            event_type=m.event_type,
            confidence=m.confidence,
            metadata={"extracted_by": extraction.method},
        )
        for m in extraction.memories
    ]
    outcomes: list[StoreOutcome] = memory_store(tenant=tenant, items=items)
    for memory, outcome in zip(extraction.memories, outcomes, strict=True):
        result.memories.append(
            {
                "text": memory.text,
                "kind": memory.kind,
                "event_type": memory.event_type,
                "outcome": outcome.outcome,
                "memory_id": outcome.memory_id,
                "embedding_pending": outcome.embedding_pending,
            }
        )


def interaction_store(*, tenant: Tenant, data: InteractionInput) -> InteractionResult:
    """Not one transaction on purpose: each step commits on its own, so a failure of a later step
    (the LLM, the embedding provider) never loses the conversation itself."""
    messages = [MessageInput("user", data.user_message)]
    if data.assistant_message:
        messages.append(MessageInput("assistant", data.assistant_message))
    appended = session_append(
        tenant=tenant,
        session_id=data.session_id,
        messages=messages,
        user_id=data.user_id,
        agent_id=data.agent_id,
    )
    result = InteractionResult(session=appended.session, trimmed_now=appended.trimmed_now)
    if data.extract:
        if not data.user_id:
            result.warnings.append("no user_id: nothing extracted into episodic memory")
        else:
            try:
                with transaction.atomic():
                    _store_extracted(tenant, data, result)
            except Exception as exc:  # the write path's own failures must not lose the turn
                logger.warning("interaction %s: extracted memories not stored: %s", data.session_id, exc)
                message = exc.message if isinstance(exc, ApplicationError) else f"{type(exc).__name__}: {exc}"
                result.warnings.append(f"extracted memories not stored: {message}")
                result.memories = []
    if data.tool_sequence and data.success_score is not None:
        try:
            result.procedure = procedure_record(
                tenant=tenant,
                query=data.query or data.user_message,
                tool_sequence=list(data.tool_sequence),
                execution_time_ms=data.execution_time_ms or 0.0,
                success_score=data.success_score,
                user_id=data.user_id,
            )
        except ApplicationError as exc:
            result.warnings.append(f"procedure not recorded: {exc.message}")
    return result
