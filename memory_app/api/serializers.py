"""Output serializers shared by several views; input serializers live beside their view."""

from __future__ import annotations

from rest_framework import serializers

from memory_app.models import Memory


class MemoryOutputSerializer(serializers.ModelSerializer):
    supersedes = serializers.SerializerMethodField()

    class Meta:
        model = Memory
        fields = [
            "id",
            "kind",
            "user_id",
            "agent_id",
            "namespace",
            "session_id",
            "text",
            "topics",
            "entities",
            "event_type",
            "event_date",
            "context",
            "category",
            "fact_type",
            "source",
            "metadata",
            "status",
            "pinned",
            "access_count",
            "helpful_count",
            "harmful_count",
            "confidence",
            "superseded_by",
            "supersedes",
            "embedding_model",
            "created_at",
            "updated_at",
            "last_accessed_at",
            "expires_at",
        ]
        read_only_fields = fields

    def get_supersedes(self, obj: Memory) -> list[int]:
        prefetched = getattr(obj, "_prefetched_objects_cache", {}).get("supersedes")
        if prefetched is not None:
            return [m.pk for m in prefetched]
        return []


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField()


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()
