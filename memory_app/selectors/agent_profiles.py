"""An agent's profile config, read once per request by the store and the search paths."""

from __future__ import annotations

import logging

from django.db.models import QuerySet

from memory_app.errors import not_found
from memory_app.models import AgentProfile, Tenant
from memory_app.models.agent_config import AgentProfileConfig

logger = logging.getLogger(__name__)


def agent_config(*, tenant: Tenant, agent_id: str | None) -> AgentProfileConfig:
    """The agent's profile config (empty without one). A value saved before validation existed and
    invalid now is ignored with a warning, not a 500."""
    if not agent_id:
        return AgentProfileConfig.parse({})
    raw = (
        AgentProfile.objects.filter(tenant=tenant, agent_id=agent_id).values_list("config", flat=True).first()
    )
    config = AgentProfileConfig.parse(raw)
    for section, key, value, _message in config.rejected:
        logger.warning("agent profile %s/%s: ignoring bad %s.%s=%r", tenant.pk, agent_id, section, key, value)
    return config


def agent_profile_get(*, tenant: Tenant, agent_id: str) -> AgentProfile:
    profile = AgentProfile.objects.filter(tenant=tenant, agent_id=agent_id).first()
    if profile is None:
        raise not_found(f"Agent profile {agent_id!r}")
    return profile


def agent_profile_list(*, tenant: Tenant) -> QuerySet[AgentProfile]:
    """The tenant's profiles, for cursor pagination (ordered by id)."""
    return AgentProfile.objects.filter(tenant=tenant)
