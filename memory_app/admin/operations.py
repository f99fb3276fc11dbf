from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from memory_app.models import (
    ConversationSession,
    EmbeddingCacheEntry,
    EmbeddingCacheStats,
    KeptApartPair,
    MaintenanceJob,
    Procedure,
    SessionMessage,
)


@admin.register(Procedure)
class ProcedureAdmin(admin.ModelAdmin):
    list_display = ["pattern", "tenant", "user_id", "execution_count", "avg_success_score", "last_used_at"]
    list_filter = ["tenant"]
    search_fields = ["pattern", "user_id"]
    list_select_related = ["tenant"]
    exclude = ["pattern_embedding"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Procedure]:
        return super().get_queryset(request).defer("pattern_embedding")


class SessionMessageInline(admin.TabularInline):
    model = SessionMessage
    extra = 0
    fields = ["position", "role", "content", "token_count", "created_at"]


@admin.register(ConversationSession)
class ConversationSessionAdmin(admin.ModelAdmin):
    list_display = ["session_id", "tenant", "user_id", "token_count", "trimmed_count", "updated_at"]
    list_filter = ["tenant"]
    search_fields = ["session_id", "user_id"]
    list_select_related = ["tenant"]
    inlines = [SessionMessageInline]


@admin.register(EmbeddingCacheEntry)
class EmbeddingCacheEntryAdmin(admin.ModelAdmin):
    list_display = ["id", "tenant", "model", "content_hash", "hit_count", "created_at", "last_hit_at"]
    list_filter = ["model", "tenant"]
    search_fields = ["content_hash", "normalized_hash"]
    exclude = ["embedding", "proxy_embedding", "surface_sketch"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[EmbeddingCacheEntry]:
        return (
            super()
            .get_queryset(request)
            .select_related("tenant")
            .defer("embedding", "proxy_embedding", "surface_sketch")
        )


@admin.register(EmbeddingCacheStats)
class EmbeddingCacheStatsAdmin(admin.ModelAdmin):
    list_display = [
        "model",
        "tenant",
        "exact_hits",
        "normalized_hits",
        "near_hits",
        "misses",
        "provider_calls",
    ]
    list_filter = ["model", "tenant"]


@admin.register(KeptApartPair)
class KeptApartPairAdmin(admin.ModelAdmin):
    list_display = ["id", "tenant", "memory_low", "memory_high", "created_by", "created_at"]
    raw_id_fields = ["memory_low", "memory_high"]
    list_select_related = ["tenant", "created_by", "memory_low", "memory_high"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[KeptApartPair]:
        vectors = ("embedding", "search_vector")
        return (
            super()
            .get_queryset(request)
            .defer(*(f"memory_low__{f}" for f in vectors), *(f"memory_high__{f}" for f in vectors))
        )


@admin.register(MaintenanceJob)
class MaintenanceJobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "tenant", "status", "created_at", "started_at", "finished_at"]
    list_filter = ["kind", "status"]
    readonly_fields = ["cursor", "stats", "error", "started_at", "finished_at", "heartbeat_at", "claimed_by"]
