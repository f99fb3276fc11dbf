from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.pagination import IdCursorPagination
from memory_app.api.serializers import ErrorSerializer, MemoryOutputSerializer
from memory_app.models.memory import MemoryKind, MemoryStatus
from memory_app.selectors.memories import MemoryFilters, memory_list


class MemoryListFilterSerializer(serializers.Serializer):
    user_id = serializers.CharField(required=False, max_length=255)
    agent_id = serializers.CharField(required=False, max_length=255)
    namespace = serializers.CharField(required=False, max_length=255)
    session_id = serializers.CharField(required=False, max_length=255)
    kind = serializers.ChoiceField(required=False, choices=MemoryKind.choices)
    status = serializers.ChoiceField(
        required=False, choices=[*MemoryStatus.values, "any"], default=MemoryStatus.ACTIVE
    )
    topic = serializers.CharField(required=False, max_length=100)
    entity = serializers.CharField(required=False, max_length=200)
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)


class MemoryCollectionApi(APIView):
    """`GET /api/v1/memories`: list (paginated, filtered)."""

    @extend_schema(
        parameters=[MemoryListFilterSerializer],
        responses={200: MemoryOutputSerializer(many=True), 400: ErrorSerializer, 401: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        params = MemoryListFilterSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = dict(params.validated_data)
        if data.get("status") == "any":
            data["status"] = None
        qs = memory_list(tenant=tenant_of(request), filters=MemoryFilters(**data))
        paginator = IdCursorPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(MemoryOutputSerializer(page, many=True).data)
