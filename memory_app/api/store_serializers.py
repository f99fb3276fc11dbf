"""Input and output serializers of the write API (store, edit, feedback, lineage, undo)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory_app.api.overrides import overrides_serializer
from memory_app.api.serializers import MemoryOutputSerializer
from memory_app.api.strict import StrictSerializer
from memory_app.conf import store_config
from memory_app.models.memory import MemoryKind
from memory_app.overrides import STORE_KNOBS
from memory_app.services.store.validation import EPISODIC_NEEDS_USER, metadata_problems


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of turning them into text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


def _check_text_length(value: str) -> None:
    limit = store_config().max_text_chars
    if len(value) > limit:
        raise serializers.ValidationError(
            f"Ensure this field has no more than {limit} characters (it has {len(value)})."
        )


def _check_metadata(value: dict[str, Any]) -> None:
    if problems := metadata_problems(value):
        raise serializers.ValidationError(problems)


class MemoryWritableFields(StrictSerializer):
    topics = serializers.ListField(child=StrictCharField(max_length=100), max_length=100, required=False)
    entities = serializers.ListField(child=StrictCharField(max_length=200), max_length=100, required=False)
    event_type = StrictCharField(max_length=100, required=False, allow_blank=True)
    event_date = serializers.DateTimeField(required=False, allow_null=True)
    # DRF's serializer metaclass moves declared fields off the class, so the fields named
    # "context" and "source" do not replace Field.context and Field.source; the stubs cannot see that.
    context = StrictCharField(  # type: ignore[assignment]
        required=False, allow_blank=True, validators=[_check_text_length]
    )
    category = StrictCharField(max_length=100, required=False, allow_blank=True)
    fact_type = StrictCharField(max_length=100, required=False, allow_blank=True)
    source = StrictCharField(max_length=500, required=False, allow_blank=True)  # type: ignore[assignment]
    metadata = serializers.DictField(
        required=False,
        validators=[_check_metadata],
        help_text="free-form JSON object, bounded by MEMORY_METADATA_MAX_BYTES / _DEPTH / _KEYS / _KEY_CHARS",
    )
    confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
    pinned = serializers.BooleanField(required=False)
    expires_at = serializers.DateTimeField(required=False, allow_null=True)


class MemoryStoreInputSerializer(MemoryWritableFields):
    """One memory to store. `POST /api/v1/memories` takes one of these or a list of them. An
    episodic memory (the default kind) names its user; semantic memory is shared and needs none."""

    text = StrictCharField(validators=[_check_text_length])
    kind = serializers.ChoiceField(choices=MemoryKind.choices, default=MemoryKind.EPISODIC)
    user_id = StrictCharField(max_length=255, required=False, allow_blank=True, default="")
    agent_id = StrictCharField(max_length=255, required=False, allow_blank=True, default="")
    namespace = StrictCharField(max_length=255, required=False, default="default")
    session_id = StrictCharField(max_length=255, required=False, allow_blank=True, default="")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["kind"] == MemoryKind.EPISODIC and not attrs["user_id"].strip():
            raise serializers.ValidationError({"user_id": [EPISODIC_NEEDS_USER]})
        return attrs


# Per-request overrides (query parameters) of the agent profile and the global settings.
StoreOptionsSerializer = overrides_serializer("StoreOptionsSerializer", STORE_KNOBS, StrictSerializer)


class StoreOutcomeSerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(
        choices=["created", "merged_into", "superseded", "duplicate_of", "queued_for_review"]
    )
    memory_id = serializers.IntegerField(help_text="the memory that now holds this input's text")
    related_ids = serializers.ListField(
        child=serializers.IntegerField(), help_text="memories merged with, superseded, or queued beside"
    )
    change_id = serializers.IntegerField(
        allow_null=True, help_text="merge/supersede; undo with /merges/{id}/undo"
    )
    cluster_id = serializers.IntegerField(allow_null=True, help_text="review cluster when queued")
    relation = serializers.CharField(allow_null=True)
    confidence = serializers.FloatField(allow_null=True)
    embedding_pending = serializers.BooleanField(
        help_text="stored without a vector (embedding provider down); a task fills it in shortly"
    )
    warnings = serializers.ListField(child=serializers.CharField(), help_text="what did not go as usual")
    memory = MemoryOutputSerializer(allow_null=True)


class MemoryUpdateInputSerializer(MemoryWritableFields):
    """`PATCH`: fields change in place; a new `text` creates a new version that supersedes this one."""

    text = StrictCharField(required=False, validators=[_check_text_length])


class FeedbackInputSerializer(StrictSerializer):
    signal = serializers.ChoiceField(choices=["helpful", "harmful"])


class LineageMemorySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    superseded_by = serializers.IntegerField(allow_null=True)


class LineageChangeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    operation = serializers.CharField()
    relation = serializers.CharField()
    actor = serializers.CharField()
    confidence = serializers.FloatField(allow_null=True)
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    undone_at = serializers.DateTimeField(allow_null=True)


class LineageSuccessorSerializer(serializers.Serializer):
    memory = LineageMemorySerializer()
    change = LineageChangeSerializer(allow_null=True)


class LineageOutputSerializer(serializers.Serializer):
    memory = LineageMemorySerializer()
    derived_from = serializers.ListField(
        child=serializers.DictField(),
        help_text=(
            "Changes whose result is this memory: {change, sources: [{memory, derived_from}]}, "
            "recursively (a source's own derivation nests the same way)."
        ),
    )
    superseded_by = LineageSuccessorSerializer(many=True, help_text="successors, oldest first")


class ChangeUndoOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    operation = serializers.CharField()
    relation = serializers.CharField()
    result_id = serializers.IntegerField()
    source_ids = serializers.ListField(child=serializers.IntegerField())
    undone_at = serializers.DateTimeField()
