from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from memory_app.models.tenancy import Tenant


class ConversationSession(models.Model):
    """Short-term memory: a session's recent messages, kept under a token budget."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="sessions")
    session_id = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255, blank=True, default="")
    agent_id = models.CharField(max_length=255, blank=True, default="")
    summary = models.TextField(blank=True, default="")
    trimmed_count = models.IntegerField(default=0)
    token_count = models.IntegerField(default=0)
    # This session's own context window in tokens; null: the agent profile's, else the setting's.
    context_window_tokens = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # Every session endpoint looks a session up by (tenant, session_id).
            models.UniqueConstraint(fields=["tenant", "session_id"], name="session_tenant_sid_unique"),
            models.CheckConstraint(condition=Q(token_count__gte=0), name="session_tokens_nonneg"),
            models.CheckConstraint(condition=Q(trimmed_count__gte=0), name="session_trimmed_nonneg"),
            models.CheckConstraint(
                condition=Q(context_window_tokens__isnull=True) | Q(context_window_tokens__gte=100),
                name="session_window_min",
            ),
        ]
        indexes = [
            # Stats and deletion per user.
            models.Index(fields=["tenant", "user_id"], name="session_tenant_user_idx"),
        ]

    def __str__(self) -> str:
        return self.session_id


class MessageRole(models.TextChoices):
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"
    SYSTEM = "system", "System"
    TOOL = "tool", "Tool"


class SessionMessage(models.Model):
    session = models.ForeignKey(ConversationSession, on_delete=models.CASCADE, related_name="messages")
    position = models.IntegerField()
    role = models.CharField(max_length=16, choices=MessageRole.choices)
    # Who said it in a multi-party chat ("Caroline"); blank when the role says enough.
    speaker = models.CharField(max_length=255, blank=True, default="")
    # The client's own id of the message, recorded on the memories made from it.
    client_message_id = models.CharField(max_length=255, blank=True, default="")
    content = models.TextField()
    token_count = models.IntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["position"]
        constraints = [
            # Ordered reads of a session and the oldest-first trim.
            models.UniqueConstraint(fields=["session", "position"], name="message_session_position_unique"),
            models.CheckConstraint(condition=Q(token_count__gte=0), name="message_tokens_nonneg"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"
