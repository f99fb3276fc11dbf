"""Short-term memory reads."""

from __future__ import annotations

from memory_app.errors import not_found
from memory_app.models import ConversationSession, SessionMessage, Tenant


def session_get(*, tenant: Tenant, session_id: str) -> ConversationSession:
    session = ConversationSession.objects.filter(tenant=tenant, session_id=session_id).first()
    if session is None:
        raise not_found(f"Session {session_id}")
    return session


def session_messages(*, session: ConversationSession, limit: int | None = None) -> list[SessionMessage]:
    """The newest `limit` messages (all when None), returned oldest first (newest last)."""
    qs = SessionMessage.objects.filter(session=session)
    if limit is None:
        return list(qs.order_by("position"))
    newest = list(qs.order_by("-position")[:limit])
    return newest[::-1]


def session_find(*, tenant: Tenant, session_id: str) -> ConversationSession | None:
    return ConversationSession.objects.filter(tenant=tenant, session_id=session_id).first()
