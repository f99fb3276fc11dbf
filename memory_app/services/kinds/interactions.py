"""interaction_store: one agent turn, or a stretch of a multi-party conversation, into all kinds of memory.

The messages (a list with roles, speakers, timestamps and client ids, or the older pair
`user_message` / `assistant_message`) go to short-term memory first (that write is never dropped);
the memories made from them (extraction/conversation.py offline, one LLM call otherwise) go through
the dedup write path (memory_store), each under the user of the speaker it is about (`speakers`
maps speaker names to user ids; unmapped speakers stay entities of `user_id`); the tool sequence,
time and success go to procedural memory. A failing extraction, store or procedure record is
reported in `warnings` and does not undo the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory_app.conf import kinds_config, store_config
from memory_app.errors import ApplicationError
from memory_app.extraction import ChatMessage, MemoryDraft, extract_conversation
from memory_app.extraction.conversation import CONTEXT_RADIUS
from memory_app.models import ConversationSession, Procedure, SessionMessage, Tenant
from memory_app.overrides import StoreOverrides
from memory_app.services.kinds.procedures import procedure_record
from memory_app.services.kinds.sessions import MessageInput, session_append
from memory_app.services.store.types import MemoryInput, StoreOutcome
from memory_app.services.store.write import memory_store

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class InteractionInput:
    session_id: str
    user_message: str = ""
    assistant_message: str = ""
    messages: Sequence[ChatMessage] = ()  # takes the place of user_message / assistant_message
    speakers: Mapping[str, str] = field(default_factory=dict)  # speaker name -> user_id
    extraction: str | None = None  # auto | llm | rules; EXTRACTION_MODE when None
    user_id: str = ""
    agent_id: str = ""
    namespace: str = "default"
    extract: bool = True
    query: str = ""  # the pattern for procedural memory; the last user message when empty
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


def chat_messages(data: InteractionInput) -> list[ChatMessage]:
    """The interaction's messages, oldest first; the older two-field shape is a user and an
    assistant message. A message without a timestamp was said now."""
    now = timezone.now()
    if data.messages:
        messages = list(data.messages)
    else:
        messages = [ChatMessage("user", data.user_message)]
        if data.assistant_message:
            messages.append(ChatMessage("assistant", data.assistant_message))
    return [m if m.timestamp is not None else replace(m, timestamp=now) for m in messages]


def _prior_messages(tenant: Tenant, session_id: str) -> list[ChatMessage]:
    """The session's last messages before this interaction: the context of its first messages."""
    rows = SessionMessage.objects.filter(session__tenant=tenant, session__session_id=session_id).order_by(
        "-position"
    )[:CONTEXT_RADIUS]
    return [
        ChatMessage(
            r.role, r.content, r.speaker, r.created_at, r.client_message_id or f"{session_id}#{r.position}"
        )
        for r in reversed(rows)
    ]


def _memory_input(draft: MemoryDraft, user_id: str, data: InteractionInput) -> MemoryInput:
    metadata: dict[str, Any] = {
        "extracted_by": draft.extracted_by,
        "speaker": draft.said_by,
        "about": draft.about,
        "source_message_ids": list(draft.source_message_ids),
    }
    if draft.said_at is not None:
        metadata["said_at"] = draft.said_at.isoformat()
    if draft.date_expression:
        metadata["date_expression"] = draft.date_expression
    return MemoryInput(
        text=draft.text,
        # Semantic facts a user states stay in that user's scope: one user's claim must not become
        # the tenant's shared knowledge base.
        kind=draft.kind,
        user_id=user_id,
        agent_id=data.agent_id,
        namespace=data.namespace,
        session_id=data.session_id,
        topics=draft.topics,
        entities=draft.entities,
        event_type=draft.event_type,
        event_date=draft.event_date,
        context=draft.context,
        source=f"conversation:{data.session_id}"[:500],
        confidence=draft.confidence,
        metadata=metadata,
    )


def _store_extracted(
    tenant: Tenant, data: InteractionInput, messages: list[ChatMessage], first: int, result: InteractionResult
) -> None:
    extraction = extract_conversation(messages, first=first, mode=data.extraction)
    result.extraction_method = extraction.method
    result.warnings.extend(extraction.warnings)
    pairs: list[tuple[MemoryDraft, MemoryInput]] = []
    unowned: set[str] = set()
    for draft in extraction.drafts:
        user_id = data.speakers.get(draft.about) or data.user_id
        if not user_id:
            unowned.add(draft.about)
            continue
        pairs.append((draft, _memory_input(draft, user_id, data)))
    if unowned:
        result.warnings.append(
            f"no user_id for {', '.join(sorted(unowned))}: their memories were not stored "
            "(give user_id or map the speaker in `speakers`)"
        )
    # A message kept as said records an utterance at a time: two different messages are two events,
    # never one memory, so they skip the relation judge (an identical text in the scope is still the
    # same memory, by hash). The facts drawn from them go through the judge like any other memory.
    judged_messages = kinds_config().interaction_judge_messages
    said = [p for p in pairs if p[0].extracted_by == "message"]
    facts = [p for p in pairs if p[0].extracted_by != "message"]
    plain = None if judged_messages else StoreOverrides(deduplicate=False)
    for group, options in ((said, plain), (facts, None)):
        _store_pairs(tenant, group, options, result)


def _store_pairs(
    tenant: Tenant,
    pairs: list[tuple[MemoryDraft, MemoryInput]],
    options: StoreOverrides | None,
    result: InteractionResult,
) -> None:
    size = store_config().max_batch
    for start in range(0, len(pairs), size):
        chunk = pairs[start : start + size]
        outcomes: list[StoreOutcome] = memory_store(
            tenant=tenant, items=[item for _, item in chunk], options=options
        )
        for (draft, item), outcome in zip(chunk, outcomes, strict=True):
            result.memories.append(
                {
                    "text": item.text,
                    "kind": item.kind,
                    "event_type": item.event_type,
                    "outcome": outcome.outcome,
                    "memory_id": outcome.memory_id,
                    "embedding_pending": outcome.embedding_pending,
                    "user_id": item.user_id,
                    "about": draft.about,
                    "event_date": item.event_date,
                    "source_message_ids": list(draft.source_message_ids),
                }
            )


def interaction_store(*, tenant: Tenant, data: InteractionInput) -> InteractionResult:
    """Not one transaction on purpose: each step commits on its own, so a failure of a later step
    (the LLM, the embedding provider) never loses the conversation itself."""
    messages = chat_messages(data)
    prior = _prior_messages(tenant, data.session_id) if data.extract else []
    appended = session_append(
        tenant=tenant,
        session_id=data.session_id,
        messages=[
            MessageInput(m.role, m.content, m.timestamp, speaker=m.speaker, client_message_id=m.message_id)
            for m in messages
        ],
        user_id=data.user_id,
        agent_id=data.agent_id,
    )
    # A message without a client id is known by its place in the session.
    messages = [
        m if m.message_id else replace(m, message_id=f"{data.session_id}#{row.position}")
        for m, row in zip(messages, appended.appended, strict=True)
    ]
    result = InteractionResult(session=appended.session, trimmed_now=appended.trimmed_now)
    if data.extract:
        if not data.user_id and not data.speakers:
            result.warnings.append("no user_id: nothing extracted into episodic memory")
        else:
            try:
                with transaction.atomic():
                    _store_extracted(tenant, data, [*prior, *messages], len(prior), result)
            except Exception as exc:  # the write path's own failures must not lose the turn
                logger.warning("interaction %s: extracted memories not stored: %s", data.session_id, exc)
                message = exc.message if isinstance(exc, ApplicationError) else f"{type(exc).__name__}: {exc}"
                result.warnings.append(f"extracted memories not stored: {message}")
                result.memories = []
    last_user = next((m.content for m in reversed(messages) if m.role == "user"), messages[-1].content)
    if data.tool_sequence and data.success_score is not None:
        try:
            result.procedure = procedure_record(
                tenant=tenant,
                query=data.query or last_user,
                tool_sequence=list(data.tool_sequence),
                execution_time_ms=data.execution_time_ms or 0.0,
                success_score=data.success_score,
                user_id=data.user_id,
            )
        except ApplicationError as exc:
            result.warnings.append(f"procedure not recorded: {exc.message}")
    return result
