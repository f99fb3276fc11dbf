"""Editing and deleting a memory in the admin goes through the same services as the API."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from memory_app.admin.mixin_base import AdminMixinBase
from memory_app.conf import store_config
from memory_app.errors import ApplicationError
from memory_app.models import Memory
from memory_app.models.memory import MemoryStatus
from memory_app.services.actors import Actor
from memory_app.services.store.edit import EDITABLE_FIELDS, memory_update
from memory_app.services.store.forget import memories_purge
from memory_app.text import normalized_hash

# Scope, counters, status and lineage change only through the write path, review and undo.
READONLY_FIELDS = (
    "tenant",
    "kind",
    "user_id",
    "agent_id",
    "namespace",
    "session_id",
    "text_hash",
    "embedding_model",
    "status",
    "replaced_by",
    "access_count",
    "helpful_count",
    "harmful_count",
    "last_accessed_at",
    "created_at",
    "updated_at",
)


class MemoryAdminForm(forms.ModelForm):
    """Checks what `memory_update` would refuse, so the reviewer sees it on the form."""

    class Meta:
        model = Memory
        fields = ("text", *EDITABLE_FIELDS)

    def clean_confidence(self) -> float:
        value = self.cleaned_data["confidence"]
        if not 0.0 <= value <= 1.0:
            raise forms.ValidationError("Must be between 0 and 1.")
        return value

    def clean_text(self) -> str:
        text = self.cleaned_data["text"].strip()
        memory = self.instance
        if not text or len(text) > store_config().max_text_chars:
            raise forms.ValidationError(f"Must be 1 to {store_config().max_text_chars} characters.")
        if text == memory.text or normalized_hash(text) == memory.text_hash:
            return text
        if memory.status != MemoryStatus.ACTIVE:
            raise forms.ValidationError("Only an active memory's text can be edited.")
        twin = (
            Memory.objects.filter(
                tenant_id=memory.tenant_id,
                user_id=memory.user_id,
                namespace=memory.namespace,
                kind=memory.kind,
                status=MemoryStatus.ACTIVE,
                text_hash=normalized_hash(text),
            )
            .values_list("pk", flat=True)
            .first()
        )
        if twin is not None:
            raise forms.ValidationError(f"Memory {twin} in this scope already says this.")
        return text


class ServiceBackedMemoryAdmin(AdminMixinBase):
    """Mixed into the memory ModelAdmins: save and delete call services, never the ORM."""

    form = MemoryAdminForm
    readonly_fields = READONLY_FIELDS

    @admin.display(description="replaced by")
    def replaced_by(self, obj: Memory) -> str:
        # The id and a link, not the row: str() of the related memory would load its vector.
        if not obj.superseded_by_id:
            return "—"
        url = reverse("admin:memory_app_memory_lineage", args=[obj.superseded_by_id])
        return format_html('<a href="{}">#{} (lineage)</a>', url, obj.superseded_by_id)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # memories arrive through the API's write path (dedup, judge, lineage)

    def save_model(self, request: HttpRequest, obj: Memory, form: Any, change: bool) -> None:
        changes = {
            name: form.cleaned_data[name] for name in form.changed_data if name in (*EDITABLE_FIELDS, "text")
        }
        if not changes:
            return
        try:
            result = memory_update(
                tenant=obj.tenant, memory_id=obj.pk, changes=changes, actor=Actor.staff(request.user)
            )
        except ApplicationError as exc:
            messages.error(request, f"Not saved: {exc.message}")
            obj.refresh_from_db()
            return
        if result.pk != obj.pk:
            messages.info(
                request,
                f"The new text is a new version, memory #{result.pk}; #{obj.pk} stays in its lineage "
                "(undo the change there to restore it).",
            )
        obj.refresh_from_db()

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # Change records are read-only in the admin, which would make Django refuse the delete;
        # memories_purge removes them (and the clusters naming the memory) on purpose.
        to_delete, model_count, _perms_needed, protected = super().get_deleted_objects(  # type: ignore[misc]
            objs, request
        )
        return to_delete, model_count, set(), protected

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        memories_purge(tenant=obj.tenant, memory_ids=[obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        by_tenant: dict[Any, list[int]] = {}
        for memory in queryset.select_related("tenant").only("pk", "tenant"):
            by_tenant.setdefault(memory.tenant, []).append(memory.pk)
        for tenant, ids in by_tenant.items():
            memories_purge(tenant=tenant, memory_ids=ids)
