"""`/api/v1/agent-profiles`: per-agent overrides of the store and search defaults, of the key's tenant.

A profile's `config` is `{"store": {...}, "search": {...}}`, checked by the same typed parser as the
admin's form (models/agent_config.py); an unknown key or a bad value is a 400 naming it under `config`.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.pagination import IdCursorPagination
from memory_app.api.serializers import ErrorSerializer
from memory_app.api.strict import StrictSerializer
from memory_app.models import AgentProfile
from memory_app.overrides import profile_help
from memory_app.selectors.agent_profiles import agent_profile_get, agent_profile_list
from memory_app.services.agent_profiles import (
    agent_profile_create,
    agent_profile_delete,
    agent_profile_update,
)

CONFIG_HELP = profile_help()
EXAMPLE = {
    "agent_id": "support-bot",
    "name": "Support bot",
    "config": {"store": {"judge": "offline", "review_below": 0.8}, "search": {"mmr": True}},
}


class AgentProfileOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = AgentProfile
        fields = ["agent_id", "name", "config", "created_at", "updated_at"]
        read_only_fields = fields


class AgentProfilePageSerializer(serializers.Serializer):
    next = serializers.URLField(allow_null=True, help_text="the next page's URL; null on the last page")
    previous = serializers.URLField(allow_null=True, help_text="the previous page's URL; null on the first")
    results = AgentProfileOutputSerializer(many=True)


class AgentProfileCreateInputSerializer(StrictSerializer):
    agent_id = serializers.CharField(max_length=255)
    name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    config = serializers.JSONField(required=False, default=dict, help_text=CONFIG_HELP)


class AgentProfileUpdateInputSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    config = serializers.JSONField(
        required=False, help_text=CONFIG_HELP + " Replaces the stored config whole."
    )


def _data(profile: AgentProfile) -> Any:
    return AgentProfileOutputSerializer(profile).data


class AgentProfileCollectionApi(APIView):
    """`GET /api/v1/agent-profiles` (cursor pages, newest first) and `POST` (create)."""

    @extend_schema(
        operation_id="agent_profiles_list",
        summary="List agent profiles",
        parameters=[
            OpenApiParameter("cursor", str, description="opaque cursor from `next` or `previous`"),
            OpenApiParameter("page_size", int, description="rows per page (default API_PAGE_SIZE)"),
        ],
        responses={200: AgentProfilePageSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        paginator = IdCursorPagination()
        rows = paginator.paginate_queryset(agent_profile_list(tenant=tenant_of(request)), request, view=self)
        assert rows is not None, "IdCursorPagination always returns a page"
        return paginator.get_paginated_response(AgentProfileOutputSerializer(rows, many=True).data)

    @extend_schema(
        summary="Create an agent profile",
        description="409 when the agent already has one (change it with PATCH).",
        request=AgentProfileCreateInputSerializer,
        responses={201: AgentProfileOutputSerializer, 400: ErrorSerializer, 409: ErrorSerializer},
        examples=[OpenApiExample("profile", request_only=True, value=EXAMPLE)],
    )
    def post(self, request: Request) -> Response:
        params = AgentProfileCreateInputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        profile = agent_profile_create(tenant=tenant_of(request), **params.validated_data)
        return Response(_data(profile), status=201)


class AgentProfileDetailApi(APIView):
    """`GET/PATCH/DELETE /api/v1/agent-profiles/{agent_id}`."""

    @extend_schema(
        summary="Read an agent profile", responses={200: AgentProfileOutputSerializer, 404: ErrorSerializer}
    )
    def get(self, request: Request, agent_id: str) -> Response:
        return Response(_data(agent_profile_get(tenant=tenant_of(request), agent_id=agent_id)))

    @extend_schema(
        summary="Change an agent profile",
        request=AgentProfileUpdateInputSerializer,
        responses={200: AgentProfileOutputSerializer, 400: ErrorSerializer, 404: ErrorSerializer},
    )
    def patch(self, request: Request, agent_id: str) -> Response:
        params = AgentProfileUpdateInputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        profile = agent_profile_update(tenant=tenant_of(request), agent_id=agent_id, **params.validated_data)
        return Response(_data(profile))

    @extend_schema(summary="Delete an agent profile", responses={204: None, 404: ErrorSerializer})
    def delete(self, request: Request, agent_id: str) -> Response:
        agent_profile_delete(tenant=tenant_of(request), agent_id=agent_id)
        return Response(status=204)
