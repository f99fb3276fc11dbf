"""Input of `POST /interactions` and `/interactions/batch`: a list of chat messages (or the older
user_message / assistant_message pair), a speaker → user map and the extraction mode. Unknown fields
and bad values are a 400 naming the field (api/strict.py)."""

from __future__ import annotations

from typing import Any, TypedDict

from rest_framework import serializers

from memory_app.api.strict import StrictSerializer
from memory_app.conf import kinds_config
from memory_app.extraction import ChatMessage
from memory_app.models.shortterm import MessageRole


class IdFieldOptions(TypedDict):
    """The keyword arguments of an optional id or scope string field."""

    max_length: int
    required: bool
    allow_blank: bool
    default: str


ID: IdFieldOptions = {"max_length": 255, "required": False, "allow_blank": True, "default": ""}


class ChatMessageSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=MessageRole.choices, help_text="who speaks: user, assistant, ...")
    speaker = serializers.CharField(
        **ID, help_text='the speaker\'s name in a multi-party chat ("Caroline"); the role when blank'
    )
    content = serializers.CharField(max_length=1_000_000, trim_whitespace=False)
    timestamp = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="when it was said (ISO 8601; now when absent); relative dates resolve against it",
    )
    message_id = serializers.CharField(
        **ID, help_text="the client's id of the message, recorded on the memories made from it"
    )

    def validate_content(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("This field may not be blank.")
        return value


class InteractionInputSerializer(StrictSerializer):
    session_id = serializers.CharField(max_length=255)
    messages = serializers.ListField(
        child=ChatMessageSerializer(),
        required=False,
        min_length=1,
        max_length=kinds_config().interaction_max_messages,
        help_text="the new messages, oldest first (instead of user_message / assistant_message)",
    )
    user_message = serializers.CharField(max_length=1_000_000, trim_whitespace=False, required=False)
    assistant_message = serializers.CharField(
        max_length=1_000_000, required=False, default="", allow_blank=True, trim_whitespace=False
    )
    speakers = serializers.DictField(
        child=serializers.CharField(max_length=255),
        required=False,
        default=dict,
        help_text="speaker name → user_id: memories about a mapped speaker go to that user",
    )
    user_id = serializers.CharField(**ID)
    agent_id = serializers.CharField(**ID)
    namespace = serializers.CharField(max_length=255, required=False, default="default")
    extract = serializers.BooleanField(required=False, default=True)
    extraction = serializers.ChoiceField(
        choices=["auto", "llm", "rules"],
        required=False,
        allow_null=True,
        default=None,
        help_text="auto: the LLM when configured, else rules (EXTRACTION_MODE when absent)",
    )
    query = serializers.CharField(max_length=4000, required=False, allow_blank=True, default="")
    tool_sequence = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, default=list, max_length=100
    )
    execution_time_ms = serializers.FloatField(required=False, min_value=0.0, max_value=1e9)
    success_score = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)

    def validate_speakers(self, value: dict[str, str]) -> dict[str, str]:
        if len(value) > 100:
            raise serializers.ValidationError("At most 100 speakers.")
        bad = [
            name for name, user in value.items() if not name.strip() or len(name) > 255 or not user.strip()
        ]
        if bad:
            raise serializers.ValidationError(f"Names and user ids may not be blank: {', '.join(bad)[:200]}.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        has_messages, has_pair = bool(attrs.get("messages")), "user_message" in attrs
        if has_messages == has_pair:
            raise serializers.ValidationError(
                {
                    "messages": [
                        "Give either `messages` or `user_message` (with an optional assistant_message)."
                    ]
                }
            )
        if has_pair and not attrs["user_message"].strip():
            raise serializers.ValidationError({"user_message": ["This field may not be blank."]})
        ids = [m["message_id"] for m in attrs.get("messages", []) if m["message_id"]]
        if len(ids) != len(set(ids)):
            raise serializers.ValidationError({"messages": ["Each message_id may appear only once."]})
        if attrs.get("tool_sequence") and attrs.get("success_score") is None:
            raise serializers.ValidationError({"success_score": ["Required with a tool_sequence."]})
        attrs["messages"] = tuple(
            ChatMessage(
                role=m["role"],
                content=m["content"],
                speaker=m["speaker"].strip(),
                timestamp=m["timestamp"],
                message_id=m["message_id"],
            )
            for m in attrs.get("messages", [])
        )
        attrs.setdefault("user_message", "")
        return attrs


class InteractionBatchInputSerializer(StrictSerializer):
    interactions = serializers.ListField(
        child=InteractionInputSerializer(),
        min_length=1,
        max_length=kinds_config().interactions_batch_max,
        help_text="interactions stored in order, e.g. the sessions of an imported history",
    )
