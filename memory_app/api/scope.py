"""Who a read is about, named one way on every operation: `user_id`, `agent_id` and `session_id` at
the top level of the request. A search's or a context's `filters.user_id` (and `filters.agent_id`,
`filters.session_id`) stay as aliases; given in both places, they must agree.

Episodic memory is about one person, so a read that reaches it names its user: without `user_id`
(and without `kind: semantic`, which is shared knowledge) the request must say `all_users: true`,
else it is a 400 naming `user_id`. An empty `user_id` ("") is a user of its own: the memories stored
without one (shared knowledge). Refusing beats a quieter default such as "only the user-less
memories": an agent that forgot the user learns it from the first call instead of from answers that
silently lack everything it stored.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory_app.api.strict import StrictSerializer
from memory_app.models.memory import MemoryKind

SCOPE_IDS = ("user_id", "agent_id", "session_id")
USER_REQUIRED = (
    "Required to read episodic memory: give the user's id, `all_users: true` to read every user's, "
    "or `kind: semantic` for shared knowledge only."
)


class ScopeFields(StrictSerializer):
    """The top-level scope of a read; a serializer with a nested `filters` merges the two."""

    user_id = serializers.CharField(
        required=False, max_length=255, allow_blank=True, help_text="the user whose memories are read"
    )
    agent_id = serializers.CharField(required=False, max_length=255, allow_blank=True)
    session_id = serializers.CharField(required=False, max_length=255, allow_blank=True)
    all_users = serializers.BooleanField(
        required=False,
        default=False,
        help_text="read every user's memories, not one user's",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        filters = dict(attrs.get("filters") or {})
        errors: dict[str, Any] = {}
        for name in SCOPE_IDS:
            top, nested = attrs.get(name), filters.get(name)
            if top is not None and nested is not None and top != nested:
                message = f"{name} ({top!r}) and filters.{name} ({nested!r}) disagree: give one of them."
                errors[name] = [message]
                errors.setdefault("filters", {})[name] = [message]
            elif top is not None:
                filters[name] = top
        if errors:
            raise serializers.ValidationError(errors)
        user = filters.get("user_id")
        if attrs.get("all_users") and user is not None:
            raise serializers.ValidationError(
                {"all_users": [f"all_users reads every user's memories; it cannot go with user_id {user!r}."]}
            )
        if user is None and not attrs.get("all_users") and filters.get("kind") != MemoryKind.SEMANTIC:
            raise serializers.ValidationError({"user_id": [USER_REQUIRED]})
        for name in SCOPE_IDS:
            attrs.pop(name, None)
        attrs["filters"] = filters
        return attrs
