from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from memory_app.admin.memories.forms import ServiceBackedMemoryAdmin
from memory_app.admin.memories.lineage import ChangeUndoViews, MemoryLineageViews
from memory_app.models import EpisodicMemory, Memory, MemoryChange, MemoryChangeSource, SemanticMemory

# Vectors are never loaded in lists or forms: 384 floats a row would dominate every page.
NO_VECTORS = ("embedding", "search_vector")


class InputFilter(admin.SimpleListFilter):
    """A free-text filter box (user ids and namespaces are too many for a list of links)."""

    template = "admin/memory_app/input_filter.html"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("", "")]  # Django shows a filter only when it has lookups

    def choices(self, changelist: Any) -> Any:
        yield {
            "parameter_name": self.parameter_name,
            "value": self.value() or "",
            "other_params": {
                k: v for k, v in changelist.get_filters_params().items() if k != self.parameter_name
            },
        }


class UserIdFilter(InputFilter):
    title = "user id"
    parameter_name = "user"

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = (self.value() or "").strip()
        return queryset.filter(user_id=value) if value else queryset


class NamespaceFilter(InputFilter):
    title = "namespace"
    parameter_name = "ns"

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = (self.value() or "").strip()
        return queryset.filter(namespace=value) if value else queryset


class MemoryAdminBase(ServiceBackedMemoryAdmin, MemoryLineageViews, admin.ModelAdmin):
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
        "lineage_link",
    ]
    list_filter = ["kind", "status", UserIdFilter, NamespaceFilter, "pinned", "tenant"]
    search_fields = ["text", "user_id", "agent_id", "session_id"]
    list_select_related = ["tenant"]
    date_hierarchy = "created_at"
    exclude = NO_VECTORS

    def get_queryset(self, request: HttpRequest) -> QuerySet[Memory]:
        return super().get_queryset(request).defer(*NO_VECTORS)

    def get_urls(self) -> list[URLPattern]:
        info = self.model._meta.app_label, self.model._meta.model_name
        custom = [
            path(
                "<int:memory_id>/lineage/",
                self.admin_site.admin_view(self.lineage_view),
                name="{}_{}_lineage".format(*info),
            )
        ]
        return custom + super().get_urls()

    @admin.display(description="text")
    def short_text(self, obj: Memory) -> str:
        return obj.text if len(obj.text) <= 90 else obj.text[:87] + "…"

    @admin.display(description="lineage")
    def lineage_link(self, obj: Memory) -> str:
        return format_html('<a href="{}">tree</a>', reverse("admin:memory_app_memory_lineage", args=[obj.pk]))


@admin.register(Memory)
class MemoryAdmin(MemoryAdminBase):
    pass


@admin.register(EpisodicMemory)
class EpisodicMemoryAdmin(MemoryAdminBase):
    list_filter = ["status", UserIdFilter, NamespaceFilter, "pinned", "tenant", "event_type"]


@admin.register(SemanticMemory)
class SemanticMemoryAdmin(MemoryAdminBase):
    list_filter = ["status", UserIdFilter, NamespaceFilter, "pinned", "tenant", "category", "fact_type"]


class MemoryChangeSourceInline(admin.TabularInline):
    model = MemoryChangeSource
    extra = 0
    fields = ["memory", "snapshot"]
    readonly_fields = ["memory", "snapshot"]
    can_delete = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryChangeSource]:
        return (
            super()
            .get_queryset(request)
            .select_related("memory")
            .defer(*(f"memory__{f}" for f in NO_VECTORS))
        )


@admin.register(MemoryChange)
class MemoryChangeAdmin(ChangeUndoViews, admin.ModelAdmin):
    list_display = [
        "id",
        "operation",
        "relation",
        "tenant",
        "result",
        "actor_type",
        "actor_user",
        "created_at",
        "undone_at",
    ]
    list_filter = ["operation", "relation", "actor_type", ("undone_at", admin.EmptyFieldListFilter)]
    list_select_related = ["tenant", "result", "actor_user"]
    inlines = [MemoryChangeSourceInline]

    # A change is history: it is undone (lineage view, review undo), never edited, added or deleted.
    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in MemoryChange._meta.concrete_fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryChange]:
        return (
            super()
            .get_queryset(request)
            .select_related("result")
            .defer("result__embedding", "result__search_vector")
        )

    def get_urls(self) -> list[URLPattern]:
        custom = [
            path(
                "<int:change_id>/undo/",
                self.admin_site.admin_view(self.undo_view),
                name="memory_app_memorychange_undo",
            )
        ]
        return custom + super().get_urls()
