from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import ApiKeyAuthentication, TenantPrincipal
from memory_app.api.serializers import ErrorSerializer
from memory_app.api.strict import StrictQueryParams
from memory_app.selectors.health import readiness_report
from memory_app.services.queue import broker_connect


class HealthApi(APIView):
    """Liveness: the process answers. No database, broker or provider call and no internal detail,
    so a load balancer can probe it every second and it never says why something else is down."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    class HealthOutputSerializer(serializers.Serializer):
        status = serializers.CharField()

    @extend_schema(responses={200: HealthOutputSerializer}, auth=[])
    def get(self, request: Request) -> Response:
        return Response({"status": "ok"})


class IsStaffOrTenant(BasePermission):
    message = "Readiness details need an API key or a staff login."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        return isinstance(user, TenantPrincipal) or bool(getattr(user, "is_staff", False))


class ReadinessApi(APIView):
    """Readiness with details: database, broker and embedding provider, each within
    HEALTH_CHECK_TIMEOUT_SECONDS. 503 when the database is unavailable (the service cannot answer);
    200 with status "degraded" when the broker or the provider is failing."""

    authentication_classes = [ApiKeyAuthentication, SessionAuthentication]
    permission_classes = [IsStaffOrTenant, StrictQueryParams]

    class ReadinessOutputSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=["ok", "degraded", "unavailable"])
        database = serializers.DictField()
        broker = serializers.DictField()
        embedding = serializers.DictField()

    @extend_schema(
        responses={
            200: ReadinessOutputSerializer,
            503: ReadinessOutputSerializer,
            401: ErrorSerializer,
            403: ErrorSerializer,
        }
    )
    def get(self, request: Request) -> Response:
        report = readiness_report(
            detailed=bool(getattr(request.user, "is_staff", False)), broker_connect=broker_connect
        )
        code = 503 if report["status"] == "unavailable" else 200
        return Response(self.ReadinessOutputSerializer(report).data, status=code)
