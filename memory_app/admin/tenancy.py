from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest

from memory_app.models import AgentProfile, ApiKey, Tenant
from memory_app.overrides import profile_help
from memory_app.services.api_keys import api_key_issue, api_key_revoke


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "is_active", "created_at"]
    list_filter = ["is_active"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "tenant", "name", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["tenant", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name", "tenant__name"]
    list_select_related = ["tenant"]
    fields = ["tenant", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke_keys"]

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        issued = api_key_issue(tenant=obj.tenant, name=obj.name)
        obj.pk = issued.api_key.pk
        obj.prefix = issued.api_key.prefix
        messages.warning(request, f"New API key (shown once, copy it now): {issued.raw_key}")

    @admin.action(description="Revoke selected keys")
    def revoke_keys(self, request: HttpRequest, queryset: Any) -> None:
        for key in queryset:
            api_key_revoke(api_key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")


class AgentProfileForm(forms.ModelForm):
    """Saving runs AgentProfile.clean(): each bad config key is named under the field."""

    class Meta:
        model = AgentProfile
        fields = ["tenant", "agent_id", "name", "config"]
        help_texts = {
            "config": profile_help(),
        }


@admin.register(AgentProfile)
class AgentProfileAdmin(admin.ModelAdmin):
    form = AgentProfileForm
    readonly_fields = ["created_at", "updated_at"]
    list_display = ["agent_id", "tenant", "name", "updated_at"]
    list_filter = ["tenant"]
    search_fields = ["agent_id", "name"]
    list_select_related = ["tenant"]
