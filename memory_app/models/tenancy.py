from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from memory_app.models.agent_config import AgentProfileConfig


class Tenant(models.Model):
    """The unit of isolation: every record belongs to exactly one tenant."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["slug"], name="tenant_slug_unique")]

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    """An API key; only its SHA-256 is stored. The prefix finds the row without a scan."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True, default="")
    prefix = models.CharField(max_length=16)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"
        constraints = [
            # Serves the authentication lookup `WHERE prefix = %s`.
            models.UniqueConstraint(fields=["prefix"], name="apikey_prefix_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.tenant})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class AgentProfile(models.Model):
    """Per-agent overrides of the global defaults (dedup, clustering, MMR, ...)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="agent_profiles")
    agent_id = models.CharField(max_length=255)
    name = models.CharField(max_length=200, blank=True, default="")
    config = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # Serves the profile lookup per request `WHERE tenant_id = %s AND agent_id = %s`.
            models.UniqueConstraint(fields=["tenant", "agent_id"], name="agentprofile_tenant_agent_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} ({self.tenant})"

    def clean(self) -> None:
        super().clean()
        problems = AgentProfileConfig.errors(self.config)
        if problems:
            raise ValidationError({"config": problems})

    @property
    def parsed_config(self) -> AgentProfileConfig:
        return AgentProfileConfig.parse(self.config)
