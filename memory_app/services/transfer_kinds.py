"""Import of the kinds beside memories: procedures, sessions with their messages, agent profiles.

Each has a natural key unique in its tenant (a procedure's user and pattern hash, a session's id, an
agent's id), so a record whose key the tenant already holds is skipped: importing a file twice, or
into the tenant it came from, adds nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np
from django.db.models import Model

from memory_app.errors import ApplicationError
from memory_app.models import AgentProfile, ConversationSession, Procedure, SessionMessage, Tenant
from memory_app.models.agent_config import AgentProfileConfig
from memory_app.selectors.transfer import MESSAGE_FIELDS, PROCEDURE_FIELDS, PROFILE_FIELDS, SESSION_FIELDS

When = Callable[..., dt.datetime | None]


def _values(record: dict[str, Any], names: tuple[str, ...], what: str) -> dict[str, Any]:
    missing = [name for name in names if name not in record]
    if missing:
        raise ApplicationError(f"{what}: field {missing[0]!r} is missing")
    return {name: record[name] for name in names}


def _dates(values: dict[str, Any], when: When, what: str, required: tuple[str, ...]) -> None:
    for name, value in values.items():
        if name.endswith("_at"):
            values[name] = when(value, record=what, name=name, required=name in required)


def _restore_updated_at(model: type[Model], tenant: Tenant, pk: int, updated_at: Any) -> None:
    # auto_now replaced the file's value at insert; put it back.
    model._default_manager.filter(tenant=tenant, pk=pk).update(updated_at=updated_at)


def procedure_import(*, tenant: Tenant, record: dict[str, Any], when: When) -> bool:
    """True when created, False when the tenant already has the procedure."""
    what = f"procedure {record.get('pattern_hash')}"
    values = _values(record, PROCEDURE_FIELDS, what)
    _dates(values, when, what, ("created_at",))
    if Procedure.objects.filter(
        tenant=tenant, user_id=values["user_id"], pattern_hash=values["pattern_hash"]
    ).exists():
        return False
    if values["pattern_embedding"] is not None:
        values["pattern_embedding"] = np.asarray(values["pattern_embedding"], dtype=np.float32)
    Procedure.objects.create(tenant=tenant, **values)
    return True


def session_import(*, tenant: Tenant, record: dict[str, Any], when: When) -> bool:
    what = f"session {record.get('session_id')}"
    values = _values(record, SESSION_FIELDS, what)
    _dates(values, when, what, ("created_at", "updated_at"))
    if ConversationSession.objects.filter(tenant=tenant, session_id=values["session_id"]).exists():
        return False
    session = ConversationSession.objects.create(tenant=tenant, **values)
    messages = []
    for number, message in enumerate(record.get("messages") or []):
        fields = _values(message, MESSAGE_FIELDS, f"{what} message {number}")
        _dates(fields, when, f"{what} message {number}", ("created_at",))
        messages.append(SessionMessage(session=session, **fields))
    SessionMessage.objects.bulk_create(messages)
    _restore_updated_at(ConversationSession, tenant, session.pk, values["updated_at"])
    return True


def agent_profile_import(*, tenant: Tenant, record: dict[str, Any], when: When) -> bool:
    what = f"agent_profile {record.get('agent_id')}"
    values = _values(record, PROFILE_FIELDS, what)
    _dates(values, when, what, ("created_at", "updated_at"))
    # The file may come from another installation: its config passes the same check as the API's.
    problems = AgentProfileConfig.errors(values["config"])
    if problems:
        raise ApplicationError(f"{what}: config {'; '.join(problems)}")
    if AgentProfile.objects.filter(tenant=tenant, agent_id=values["agent_id"]).exists():
        return False
    profile = AgentProfile.objects.create(tenant=tenant, **values)
    _restore_updated_at(AgentProfile, tenant, profile.pk, values["updated_at"])
    return True
