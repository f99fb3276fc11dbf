"""Agent profiles: create, change, delete. The config is checked by the same typed parser as the
admin's form (`AgentProfileConfig.errors`), so the API and the admin accept exactly the same values."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory_app.errors import ApplicationError, not_found
from memory_app.models import AgentProfile, Tenant
from memory_app.models.agent_config import AgentProfileConfig


def _checked_config(config: Any) -> dict[str, Any]:
    problems = AgentProfileConfig.errors(config)
    if problems:
        raise ApplicationError("Invalid agent profile config.", fields={"config": problems})
    return dict(config)


@transaction.atomic
def agent_profile_create(
    *, tenant: Tenant, agent_id: str, name: str = "", config: Any = None
) -> AgentProfile:
    if not agent_id.strip():
        raise ApplicationError("agent_id is required.", fields={"agent_id": ["This field is required."]})
    checked = _checked_config({} if config is None else config)
    try:
        # A savepoint, so a concurrent create of the same agent is a 409 and not a broken transaction.
        with transaction.atomic():
            return AgentProfile.objects.create(tenant=tenant, agent_id=agent_id, name=name, config=checked)
    except IntegrityError:
        raise ApplicationError(
            f"Agent profile {agent_id!r} already exists.", code="conflict", status=409
        ) from None


@transaction.atomic
def agent_profile_update(
    *, tenant: Tenant, agent_id: str, name: str | None = None, config: Any = None
) -> AgentProfile:
    """`name` and `config` change when given; a given config replaces the stored one whole."""
    profile = AgentProfile.objects.select_for_update().filter(tenant=tenant, agent_id=agent_id).first()
    if profile is None:
        raise not_found(f"Agent profile {agent_id!r}")
    if config is not None:
        profile.config = _checked_config(config)
    if name is not None:
        profile.name = name
    profile.updated_at = timezone.now()
    profile.save(update_fields=["name", "config", "updated_at"])
    return profile


@transaction.atomic
def agent_profile_delete(*, tenant: Tenant, agent_id: str) -> None:
    deleted, _ = AgentProfile.objects.filter(tenant=tenant, agent_id=agent_id).delete()
    if not deleted:
        raise not_found(f"Agent profile {agent_id!r}")
