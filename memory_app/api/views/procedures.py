from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.serializers import ErrorSerializer
from memory_app.api.strict import StrictSerializer
from memory_app.models import Procedure
from memory_app.selectors.kinds.procedures import confidence_of, procedure_suggest
from memory_app.services.kinds.procedures import procedure_record


class ProcedureOutputSerializer(serializers.ModelSerializer):
    confidence = serializers.SerializerMethodField()

    class Meta:
        model = Procedure
        fields = [
            "id",
            "user_id",
            "pattern",
            "tool_sequence",
            "execution_count",
            "avg_execution_time_ms",
            "avg_success_score",
            "confidence",
            "created_at",
            "last_used_at",
        ]
        read_only_fields = fields

    def get_confidence(self, obj: Procedure) -> float:
        return confidence_of(obj)


class ProcedureRecordApi(APIView):
    """`POST /api/v1/procedures/record`: one run of a query's tool sequence, folded into its pattern."""

    class ProcedureRecordInputSerializer(StrictSerializer):
        query = serializers.CharField(max_length=4000)
        tool_sequence = serializers.ListField(
            child=serializers.CharField(max_length=200), min_length=1, max_length=100
        )
        execution_time_ms = serializers.FloatField(min_value=0.0, max_value=1e9)
        success_score = serializers.FloatField(min_value=0.0, max_value=1.0)
        user_id = serializers.CharField(required=False, default="", allow_blank=True, max_length=255)

    @extend_schema(
        request=ProcedureRecordInputSerializer,
        responses={200: ProcedureOutputSerializer, 400: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        data = self.ProcedureRecordInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        proc = procedure_record(tenant=tenant_of(request), **data.validated_data)
        return Response(ProcedureOutputSerializer(proc).data)


class ProcedureSuggestApi(APIView):
    """`POST /api/v1/procedures/suggest`: the recorded procedure for a query, exact pattern first."""

    class ProcedureSuggestInputSerializer(StrictSerializer):
        query = serializers.CharField(max_length=4000)
        user_id = serializers.CharField(required=False, default="", allow_blank=True, max_length=255)
        max_distance = serializers.FloatField(required=False, min_value=0.0, max_value=2.0)

    class ProcedureSuggestOutputSerializer(serializers.Serializer):
        match = serializers.ChoiceField(choices=["exact", "similar", "none"])
        distance = serializers.FloatField(allow_null=True)
        confidence = serializers.FloatField()
        recommended = serializers.BooleanField()
        procedure = ProcedureOutputSerializer(allow_null=True)

    @extend_schema(
        request=ProcedureSuggestInputSerializer,
        responses={200: ProcedureSuggestOutputSerializer, 400: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        data = self.ProcedureSuggestInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        suggestion = procedure_suggest(tenant=tenant_of(request), **data.validated_data)
        return Response(self.ProcedureSuggestOutputSerializer(suggestion).data)
