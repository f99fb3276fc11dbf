"""The coordinator endpoints an agent calls every turn: context/all, interactions, stats."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.serializers import ErrorSerializer
from memory_app.api.strict import StrictSerializer
from memory_app.api.views.procedures import ProcedureOutputSerializer
from memory_app.api.views.sessions import SessionOutputSerializer
from memory_app.selectors.context import ContextRequest, context_all
from memory_app.selectors.stats import stats_get
from memory_app.services.interactions import InteractionInput, interaction_store

ID = {"max_length": 255, "required": False, "allow_blank": True, "default": ""}


class PartErrorSerializer(serializers.Serializer):
    part = serializers.CharField()
    code = serializers.CharField()
    message = serializers.CharField()


class StoredMemorySerializer(serializers.Serializer):
    text = serializers.CharField()
    kind = serializers.CharField()
    event_type = serializers.CharField()
    outcome = serializers.CharField()
    memory_id = serializers.IntegerField()
    embedding_pending = serializers.BooleanField(
        help_text="stored without a vector (embedding provider down); a task fills it in"
    )


class ContextAllApi(APIView):
    """`POST /api/v1/context/all`: short-term, episodic, semantic and procedural memory for a turn."""

    class ContextAllInputSerializer(StrictSerializer):
        query = serializers.CharField(max_length=8000)
        user_id = serializers.CharField(**ID)
        session_id = serializers.CharField(**ID)
        agent_id = serializers.CharField(**ID)
        namespace = serializers.CharField(max_length=255, required=False, default="default")
        include_short_term = serializers.BooleanField(required=False, default=True)
        include_episodic = serializers.BooleanField(required=False, default=True)
        include_semantic = serializers.BooleanField(required=False, default=True)
        include_procedural = serializers.BooleanField(required=False, default=True)
        short_term_limit = serializers.IntegerField(required=False, default=20, min_value=1, max_value=500)
        episodic_limit = serializers.IntegerField(required=False, default=5, min_value=1, max_value=100)
        semantic_limit = serializers.IntegerField(required=False, default=5, min_value=1, max_value=100)

    class ContextAllOutputSerializer(serializers.Serializer):
        short_term = serializers.DictField(allow_null=True)
        episodic = serializers.DictField(allow_null=True)
        semantic = serializers.DictField(allow_null=True)
        procedural = serializers.DictField(allow_null=True)
        counts = serializers.DictField(child=serializers.IntegerField())
        formatted = serializers.CharField(help_text="every part, ready to paste into a prompt")
        errors = serializers.ListField(child=PartErrorSerializer())

    @extend_schema(
        request=ContextAllInputSerializer, responses={200: ContextAllOutputSerializer, 400: ErrorSerializer}
    )
    def post(self, request: Request) -> Response:
        data = self.ContextAllInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = context_all(tenant=tenant_of(request), request=ContextRequest(**data.validated_data))
        return Response(self.ContextAllOutputSerializer(result).data)


class InteractionsApi(APIView):
    """`POST /api/v1/interactions`: store one turn into short-term, episodic and procedural memory."""

    class InteractionInputSerializer(StrictSerializer):
        session_id = serializers.CharField(max_length=255)
        user_message = serializers.CharField(max_length=1_000_000, trim_whitespace=False)
        assistant_message = serializers.CharField(
            max_length=1_000_000, required=False, default="", allow_blank=True, trim_whitespace=False
        )
        user_id = serializers.CharField(**ID)
        agent_id = serializers.CharField(**ID)
        namespace = serializers.CharField(max_length=255, required=False, default="default")
        extract = serializers.BooleanField(required=False, default=True)
        query = serializers.CharField(max_length=4000, **{k: v for k, v in ID.items() if k != "max_length"})
        tool_sequence = serializers.ListField(
            child=serializers.CharField(max_length=200), required=False, default=list, max_length=100
        )
        execution_time_ms = serializers.FloatField(required=False, min_value=0.0, max_value=1e9)
        success_score = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)

        def validate(self, attrs: dict) -> dict:
            if attrs.get("tool_sequence") and attrs.get("success_score") is None:
                raise serializers.ValidationError({"success_score": ["Required with a tool_sequence."]})
            return attrs

    class InteractionOutputSerializer(serializers.Serializer):
        session = SessionOutputSerializer()
        trimmed_now = serializers.IntegerField()
        extraction_method = serializers.CharField(allow_null=True)
        memories = StoredMemorySerializer(many=True)
        procedure = ProcedureOutputSerializer(allow_null=True)
        warnings = serializers.ListField(child=serializers.CharField())

    @extend_schema(
        request=InteractionInputSerializer,
        responses={201: InteractionOutputSerializer, 400: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        data = self.InteractionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = interaction_store(tenant=tenant_of(request), data=InteractionInput(**data.validated_data))
        return Response(self.InteractionOutputSerializer(result).data, status=201)


class StatsApi(APIView):
    """`GET /api/v1/stats?user_id=&session_id=`: counts per kind, procedures, sessions, review backlog."""

    class StatsParamsSerializer(StrictSerializer):
        user_id = serializers.CharField(required=False, max_length=255)
        session_id = serializers.CharField(required=False, max_length=255)

    class StatsOutputSerializer(serializers.Serializer):
        scope = serializers.DictField()
        memories = serializers.DictField()
        knowledge_base = serializers.DictField()
        procedural = serializers.DictField()
        short_term = serializers.DictField()
        review_backlog = serializers.IntegerField()

    @extend_schema(
        parameters=[StatsParamsSerializer], responses={200: StatsOutputSerializer, 400: ErrorSerializer}
    )
    def get(self, request: Request) -> Response:
        params = self.StatsParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        report = stats_get(tenant=tenant_of(request), **params.validated_data)
        return Response(self.StatsOutputSerializer(report).data)
