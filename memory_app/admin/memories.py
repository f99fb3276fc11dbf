from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from memory_app.models import EpisodicMemory, Memory, MemoryChange, MemoryChangeSource, SemanticMemory

# Vectors are never loaded in lists or forms: 384 floats a row would dominate every page.
NO_VECTORS = ("embedding", "search_vector")


class MemoryAdminBase(admin.ModelAdmin):
    list_display = [
        "id",
        "short_text",
        "kind",
        "tenant",
        "user_id",
        "namespace",
        "status",
        "confidence",
        "access_count",
        "created_at",
    ]
    list_filter = ["kind", "status", "pinned", "tenant", "namespace"]
    search_fields = ["text", "user_id", "agent_id", "session_id"]
    list_select_related = ["tenant"]
    date_hierarchy = "created_at"
    exclude = NO_VECTORS
    readonly_fields = ["text_hash", "embedding_model", "superseded_by", "created_at", "updated_at"]
    raw_id_fields = ["superseded_by"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Memory]:
        return super().get_queryset(request).defer(*NO_VECTORS)

    @admin.display(description="text")
    def short_text(self, obj: Memory) -> str:
        return obj.text if len(obj.text) <= 90 else obj.text[:87] + "…"


@admin.register(Memory)
class MemoryAdmin(MemoryAdminBase):
    pass


@admin.register(EpisodicMemory)
class EpisodicMemoryAdmin(MemoryAdminBase):
    list_filter = ["status", "pinned", "tenant", "event_type"]


@admin.register(SemanticMemory)
class SemanticMemoryAdmin(MemoryAdminBase):
    list_filter = ["status", "pinned", "tenant", "namespace", "category", "fact_type"]


class MemoryChangeSourceInline(admin.TabularInline):
    model = MemoryChangeSource
    extra = 0
    fields = ["memory", "snapshot"]
    readonly_fields = ["memory", "snapshot"]
    can_delete = False


@admin.register(MemoryChange)
class MemoryChangeAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "operation",
        "relation",
        "tenant",
        "result",
        "actor_type",
        "created_at",
        "undone_at",
    ]
    list_filter = ["operation", "relation", "actor_type", ("undone_at", admin.EmptyFieldListFilter)]
    list_select_related = ["tenant", "result"]
    raw_id_fields = ["result"]
    readonly_fields = ["created_at", "undone_at", "undone_by", "actor_user"]
    inlines = [MemoryChangeSourceInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryChange]:
        return super().get_queryset(request).defer("result__embedding", "result__search_vector")
