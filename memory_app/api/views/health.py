from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.selectors.health import health_report


class HealthApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class HealthOutputSerializer(serializers.Serializer):
        status = serializers.CharField()
        database = serializers.DictField()
        broker = serializers.DictField()
        embedding = serializers.DictField()

    @extend_schema(responses={200: HealthOutputSerializer, 503: HealthOutputSerializer}, auth=[])
    def get(self, request: Request) -> Response:
        report = health_report()
        code = 200 if report["database"]["status"] == "ok" else 503
        return Response(self.HealthOutputSerializer(report).data, status=code)
