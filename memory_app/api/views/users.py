from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.serializers import ErrorSerializer
from memory_app.api.strict import StrictSerializer
from memory_app.services.store.forget import user_memories_delete


class UserMemoriesApi(APIView):
    """`DELETE /api/v1/users/{user_id}/memories`: forget a user (hard delete, lineage included)."""

    class UserMemoriesDeleteParamsSerializer(StrictSerializer):
        episodic = serializers.BooleanField(required=False, default=True)
        semantic = serializers.BooleanField(required=False, default=True)
        procedural = serializers.BooleanField(required=False, default=True)
        short_term = serializers.BooleanField(required=False, default=True)

    class UserMemoriesDeleteOutputSerializer(serializers.Serializer):
        user_id = serializers.CharField()
        deleted = serializers.DictField(child=serializers.IntegerField())

    @extend_schema(
        parameters=[UserMemoriesDeleteParamsSerializer],
        responses={200: UserMemoriesDeleteOutputSerializer, 400: ErrorSerializer},
    )
    def delete(self, request: Request, user_id: str) -> Response:
        params = self.UserMemoriesDeleteParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        counts = user_memories_delete(tenant=tenant_of(request), user_id=user_id, **params.validated_data)
        return Response(self.UserMemoriesDeleteOutputSerializer({"user_id": user_id, "deleted": counts}).data)
