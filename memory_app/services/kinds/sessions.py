"""Short-term memory: append to a session under a token budget, trim the oldest, delete.

The budget is SESSION_TRIM_AT x the context window and covers the messages plus the summary; the
window is the session's own (`context_window_tokens`), else its agent profile's
(`session.context_window_tokens`), else SESSION_CONTEXT_WINDOW_TOKENS. Past the budget, the oldest
messages go until what remains fits SESSION_TRIM_TO x window, folded into the summary first (of at
most SESSION_SUMMARY_MAX_TOKENS; 0 keeps none): by the LLM when one is configured, else (or when it
fails) extractively, keeping the sentences that carry facts (extraction/summary.py). A single
message larger than the whole budget is cut to the budget (its beginning is kept, " […]" marks the
cut) and, being the newest, it is the one message left; the summary is then cut to what is left.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Max

from memory_app.conf import kinds_config
from memory_app.db.conflicts import retry_on_conflict
from memory_app.embeddings.tokens import count_tokens, encoding_for
from memory_app.errors import ApplicationError, not_found
from memory_app.extraction.summary import SaidBy, extractive_summary
from memory_app.llm_client import LlmUnavailable, chat, llm_configured
from memory_app.models import ConversationSession, Memory, SessionMessage, Tenant
from memory_app.retrieval.trim import plan_trim
from memory_app.selectors.agent_profiles import agent_config
from memory_app.services.store.forget import admin_log_forget, memories_purge

logger = logging.getLogger(__name__)
TRUNCATION_MARK = " […]"


@dataclass(frozen=True)
class MessageInput:
    role: str
    content: str
    created_at: datetime | None = None
    speaker: str = ""
    client_message_id: str = ""


@dataclass(frozen=True)
class AppendResult:
    session: ConversationSession
    appended: list[SessionMessage]
    trimmed_now: int
    summarized: bool
    summary_method: str | None = None  # "llm" or "extractive" when this append wrote the summary


def session_window(*, tenant: Tenant, session: ConversationSession) -> int:
    """The session's context window in tokens: its own, else its agent's profile's, else the setting."""
    if session.context_window_tokens:
        return session.context_window_tokens
    profile = agent_config(tenant=tenant, agent_id=session.agent_id).session.context_window_tokens
    return profile or kinds_config().session_context_window_tokens


def session_budget(window: int | None = None) -> tuple[int, int]:
    """(budget, target) in tokens of a `window` (default: the setting's)."""
    window = window or kinds_config().session_context_window_tokens
    return int(window * kinds_config().session_trim_at), int(window * kinds_config().session_trim_to)


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """`text` cut to at most `max_tokens` tokens, keeping its beginning and marking the cut."""
    if max_tokens <= 0:
        return ""
    if count_tokens(text) <= max_tokens:
        return text
    mark_tokens = count_tokens(TRUNCATION_MARK)
    if max_tokens <= mark_tokens:
        return ""
    encoding = encoding_for(None)
    keep = max_tokens - mark_tokens
    while keep > 0:
        if encoding is None:
            head = text[: keep * 4]
        else:
            head = encoding.decode(encoding.encode(text, disallowed_special=())[:keep])
        candidate = head + TRUNCATION_MARK
        # A decode/encode round trip can merge tokens differently; shrink until the count holds.
        if count_tokens(candidate) <= max_tokens:
            return candidate
        keep -= 1
    return ""


def _summarize(previous: str, messages: Sequence[SessionMessage], max_tokens: int) -> str:
    transcript = "\n".join(f"{m.role}: {m.content}" for m in messages)
    system = (
        "You maintain the running summary of a conversation between a user and an assistant. "
        "Fold the older messages into the summary: keep facts about the user, decisions, open "
        f"questions and commitments; drop chit-chat. Answer with the new summary only, at most "
        f"{max_tokens} tokens."
    )
    user = f"Current summary:\n{previous or '(none)'}\n\nOlder messages to fold in:\n{transcript}"
    return chat(system=system, user=user, max_tokens=max_tokens).strip()


def _offline_summary(previous: str, messages: Sequence[SessionMessage], max_tokens: int) -> str:
    said = [SaidBy(m.speaker or m.role, m.content) for m in messages]
    return extractive_summary(previous=previous, messages=said, max_tokens=max_tokens, count=count_tokens)


def _locked_session(*, tenant: Tenant, session_id: str, user_id: str, agent_id: str) -> ConversationSession:
    # Appends to one session serialise on its row: positions and the trim stay consistent. A delete
    # locks the same row first, so an append waiting behind it finds the row gone and starts a new
    # session (the messages after an erasure belong to a new conversation), never a dangling one.
    for _attempt in range(3):
        session, _created = ConversationSession.objects.get_or_create(
            tenant=tenant, session_id=session_id, defaults={"user_id": user_id, "agent_id": agent_id}
        )
        locked = ConversationSession.objects.select_for_update().filter(tenant=tenant, pk=session.pk).first()
        if locked is not None:
            session = locked
            break
    else:
        raise ApplicationError(
            f"Session {session_id} was deleted and recreated while this request ran; retry.",
            code="conflict",
            status=409,
        )
    if user_id and session.user_id and session.user_id != user_id:
        raise ApplicationError(
            f"Session {session_id} belongs to another user.",
            code="conflict",
            status=409,
            fields={"user_id": ["Does not match the session's user."]},
        )
    if user_id and not session.user_id:
        session.user_id = user_id
    if agent_id and not session.agent_id:
        session.agent_id = agent_id
    return session


@retry_on_conflict
@transaction.atomic
def session_append(
    *,
    tenant: Tenant,
    session_id: str,
    messages: Sequence[MessageInput],
    user_id: str = "",
    agent_id: str = "",
    context_window_tokens: int | None = None,
) -> AppendResult:
    """Append messages (oldest first) and trim the session back under its budget.
    `context_window_tokens`: set the session's own window (None leaves it as it is)."""
    if not messages:
        raise ApplicationError("Give at least one message.", fields={"messages": ["Empty."]})
    session = _locked_session(tenant=tenant, session_id=session_id, user_id=user_id, agent_id=agent_id)
    if context_window_tokens is not None:
        session.context_window_tokens = context_window_tokens
    budget, target = session_budget(session_window(tenant=tenant, session=session))
    last = session.messages.aggregate(last=Max("position"))["last"]
    position = -1 if last is None else last
    new_rows = []
    for message in messages:
        content = truncate_to_tokens(message.content, budget)
        position += 1
        row = SessionMessage(
            session=session,
            position=position,
            role=message.role,
            speaker=message.speaker,
            client_message_id=message.client_message_id,
            content=content,
            token_count=count_tokens(content),
        )
        if message.created_at is not None:
            row.created_at = message.created_at
        new_rows.append(row)
    appended = SessionMessage.objects.bulk_create(new_rows)

    rows = list(session.messages.order_by("position").only("id", "position", "token_count"))
    summary_tokens = count_tokens(session.summary)
    summary_max = kinds_config().session_summary_max_tokens
    reserve = min(summary_max, target) if summary_max > 0 else summary_tokens
    plan = plan_trim(
        [r.token_count for r in rows],
        summary_tokens=summary_tokens,
        budget=budget,
        target=target,
        summary_reserve=reserve,
    )
    method: str | None = None
    if plan.trim:
        trimmed = rows[: plan.trim]
        if summary_max > 0:
            full = list(session.messages.filter(pk__in=[r.pk for r in trimmed]).order_by("position"))
            limit = max(min(summary_max, plan.summary_budget), 1)
            if llm_configured():
                try:
                    session.summary = _summarize(session.summary, full, limit)
                    method = "llm"
                except LlmUnavailable as exc:
                    logger.warning("session %s: LLM summary failed, extractive instead (%s)", session_id, exc)
            if method is None:
                session.summary = _offline_summary(session.summary, full, limit)
                method = "extractive"
        SessionMessage.objects.filter(pk__in=[r.pk for r in trimmed]).delete()
        session.trimmed_count += plan.trim
        rows = rows[plan.trim :]
    remaining = sum(r.token_count for r in rows)
    session.summary = truncate_to_tokens(session.summary, budget - remaining)
    session.token_count = remaining + count_tokens(session.summary)
    session.save()
    return AppendResult(
        session=session,
        appended=appended,
        trimmed_now=plan.trim,
        summarized=method is not None,
        summary_method=method,
    )


@retry_on_conflict
@transaction.atomic
def session_delete(*, tenant: Tenant, session_id: str, memories: bool = False) -> dict[str, int]:
    """Hard-delete a session and its messages; with `memories`, also the long-term memories
    stored from it (and their lineage, see services.forget).

    The session row is locked first, as appends lock it, so no message can be added between reading
    the messages and deleting the session; the memories are then purged under their scopes' locks
    (memories_purge), the order every path that holds both follows."""
    session = (
        ConversationSession.objects.select_for_update().filter(tenant=tenant, session_id=session_id).first()
    )
    if session is None and not memories:
        raise not_found(f"Session {session_id}")
    counts = {"sessions": 0, "messages": 0, "memories": 0}
    if session is not None:
        message_ids = list(session.messages.values_list("pk", flat=True))
        admin_log_forget(SessionMessage, message_ids)
        admin_log_forget(ConversationSession, [session.pk])
        counts["messages"] = SessionMessage.objects.filter(pk__in=message_ids).delete()[0]
        session.delete()
        counts["sessions"] = 1
    if memories:
        ids = list(Memory.objects.filter(tenant=tenant, session_id=session_id).values_list("pk", flat=True))
        counts["memories"] = memories_purge(tenant=tenant, memory_ids=ids)
    if not any(counts.values()):
        raise not_found(f"Session {session_id}")
    return counts
