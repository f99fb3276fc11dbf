"""The coordinator endpoints an agent calls every turn: context/all, interactions, stats."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.consistency import (
    CONSISTENCY_PARAMETER,
    ConsistencyParamsSerializer,
    read_with_consistency,
)
from memory_app.api.conversation_serializers import (
    ID,
    InteractionBatchInputSerializer,
    InteractionInputSerializer,
)
from memory_app.api.serializers import ErrorSerializer, represent
from memory_app.api.strict import StrictSerializer
from memory_app.api.time_fields import QueryTimeFields, time_window_field
from memory_app.api.views.procedures import ProcedureOutputSerializer
from memory_app.api.views.sessions import SessionOutputSerializer
from memory_app.conf import context_config
from memory_app.db_routing import run_read
from memory_app.selectors.context.turn import ContextRequest, context_all, shown_memory_ids
from memory_app.selectors.stats.counts import stats_get
from memory_app.services.kinds.interactions import InteractionInput, interaction_store
from memory_app.services.store.access import memory_access_record


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
    user_id = serializers.CharField(help_text="the user the memory was stored under")
    about = serializers.CharField(help_text="the speaker the memory is about")
    event_date = serializers.DateTimeField(allow_null=True, help_text="when it happened, resolved")
    source_message_ids = serializers.ListField(child=serializers.CharField())


INTERACTION_EXAMPLE = OpenApiExample(
    "a multi-party conversation",
    request_only=True,
    value={
        "session_id": "s1",
        "user_id": "u1",
        "messages": [
            {
                "role": "user",
                "speaker": "Caroline",
                "content": "I went to a LGBTQ support group yesterday and it was so powerful.",
                "timestamp": "2023-05-08T13:56:00Z",
                "message_id": "D1:3",
            },
            {
                "role": "user",
                "speaker": "Melanie",
                "content": "Wow! My daughter Mia just turned 7 last week.",
                "timestamp": "2023-05-08T13:57:00Z",
                "message_id": "D1:4",
            },
        ],
        "speakers": {"Caroline": "u1", "Melanie": "u2"},
        "extraction": "rules",
    },
)
PAIR_EXAMPLE = OpenApiExample(
    "one agent turn",
    request_only=True,
    value={
        "session_id": "s1",
        "user_id": "u1",
        "user_message": "I love hiking in the mountains. Can you plan a trip?",
        "assistant_message": "Sure! How about the Alps in June?",
    },
)
STORED_EXAMPLE = OpenApiExample(
    "stored memories",
    response_only=True,
    status_codes=["201"],
    value={
        "session": {
            "session_id": "s1",
            "user_id": "u1",
            "agent_id": "",
            "summary": "",
            "trimmed_count": 0,
            "token_count": 41,
            "context_window_tokens": None,
            "created_at": "2023-05-08T13:56:00Z",
            "updated_at": "2023-05-08T13:57:00Z",
        },
        "trimmed_now": 0,
        "extraction_method": "rules",
        "memories": [
            {
                "text": "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
                "kind": "episodic",
                "event_type": "message",
                "outcome": "created",
                "memory_id": 42,
                "embedding_pending": False,
                "user_id": "u1",
                "about": "Caroline",
                "event_date": "2023-05-07T13:56:00Z",
                "source_message_ids": ["D1:3"],
            }
        ],
        "procedure": None,
        "warnings": [],
    },
)


class ContextAllApi(APIView):
    """`POST /api/v1/context/all`: short-term, episodic, semantic and procedural memory for a turn."""

    class ContextAllInputSerializer(QueryTimeFields, StrictSerializer):
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
        episodic_limit = serializers.IntegerField(
            required=False, default=None, min_value=1, max_value=100, help_text="default: as many as fit"
        )
        semantic_limit = serializers.IntegerField(
            required=False, default=None, min_value=1, max_value=100, help_text="default: as many as fit"
        )
        max_tokens = serializers.IntegerField(
            required=False,
            default=None,
            min_value=1,
            max_value=200_000,
            help_text=f"token budget of the answer (tiktoken); default {context_config().all_max_tokens}",
        )

    class ContextAllOutputSerializer(serializers.Serializer):
        short_term = serializers.DictField(allow_null=True)
        episodic = serializers.DictField(allow_null=True)
        semantic = serializers.DictField(allow_null=True)
        procedural = serializers.DictField(allow_null=True)
        counts = serializers.DictField(child=serializers.IntegerField())
        formatted = serializers.CharField(help_text="every part, ready to paste into a prompt")
        # DRF's serializer metaclass moves declared fields off the class, so this field named "errors"
        # does not replace Serializer.errors; the stubs cannot see that.
        errors = serializers.ListField(child=PartErrorSerializer())  # type: ignore[assignment]
        max_tokens = serializers.IntegerField(help_text="the budget applied")
        tokens = serializers.DictField(
            child=serializers.IntegerField(), help_text="tokens of each part and of `formatted` (total)"
        )
        time_window = time_window_field()

    @extend_schema(
        parameters=[CONSISTENCY_PARAMETER],
        request=ContextAllInputSerializer,
        responses={200: ContextAllOutputSerializer, 400: ErrorSerializer},
        examples=[
            OpenApiExample(
                "a budgeted turn",
                request_only=True,
                value={
                    "query": "When did Caroline go to the support group?",
                    "user_id": "u1",
                    "max_tokens": 1000,
                },
            ),
            OpenApiExample(
                "a budgeted answer with its token report",
                response_only=True,
                value={
                    "short_term": None,
                    "episodic": {
                        "formatted": "- (7 May 2023) Caroline went to a LGBTQ support group",
                        "count": 1,
                        "tokens": 14,
                        "memories": [
                            {
                                "id": 42,
                                "text": "Caroline went to a LGBTQ support group",
                                "score": 0.83,
                                "category": "",
                                "created_at": "2023-05-08T13:56:00Z",
                                "event_date": "2023-05-07T00:00:00Z",
                                "said_at": "2023-05-08T13:56:00Z",
                                "member_ids": [],
                            }
                        ],
                    },
                    "semantic": None,
                    "procedural": None,
                    "counts": {"episodic": 1},
                    "formatted": "Episodes:\n- (7 May 2023) Caroline went to a LGBTQ support group",
                    "errors": [],
                    "max_tokens": 1000,
                    "tokens": {
                        "short_term": 0,
                        "semantic": 0,
                        "episodic": 14,
                        "procedural": 0,
                        "total": 18,
                    },
                    "time_window": None,
                },
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        data = self.ContextAllInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        tenant = tenant_of(request)

        shown: list[int] = []

        def context() -> Any:
            result = context_all(tenant=tenant, request=ContextRequest(**data.validated_data))
            shown[:] = shown_memory_ids(result)
            return represent(self.ContextAllOutputSerializer, result)

        answer = read_with_consistency(request, context)
        memory_access_record(tenant=tenant, memory_ids=shown)
        return Response(answer)


class InteractionsApi(APIView):
    """`POST /api/v1/interactions`: store one turn into short-term, episodic and procedural memory."""

    InteractionInputSerializer = InteractionInputSerializer

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
        examples=[INTERACTION_EXAMPLE, PAIR_EXAMPLE, STORED_EXAMPLE],
    )
    def post(self, request: Request) -> Response:
        data = self.InteractionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = interaction_store(tenant=tenant_of(request), data=InteractionInput(**data.validated_data))
        return Response(self.InteractionOutputSerializer(result).data, status=201)


class InteractionsBatchApi(APIView):
    """`POST /api/v1/interactions/batch`: import a history, interactions stored in order (at most
    INTERACTIONS_BATCH_MAX per request); each is stored as `POST /interactions` stores it."""

    class InteractionBatchOutputSerializer(serializers.Serializer):
        results = InteractionsApi.InteractionOutputSerializer(many=True)

    @extend_schema(
        request=InteractionBatchInputSerializer,
        responses={201: InteractionBatchOutputSerializer, 400: ErrorSerializer, 409: ErrorSerializer},
        examples=[
            OpenApiExample(
                "two sessions of a history",
                request_only=True,
                value={
                    "interactions": [
                        INTERACTION_EXAMPLE.value,
                        {**INTERACTION_EXAMPLE.value, "session_id": "s2"},
                    ]
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        data = InteractionBatchInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        tenant = tenant_of(request)
        results = [
            interaction_store(tenant=tenant, data=InteractionInput(**item))
            for item in data.validated_data["interactions"]
        ]
        output = InteractionsApi.InteractionOutputSerializer(results, many=True).data
        return Response({"results": output}, status=201)


class StatsApi(APIView):
    """`GET /api/v1/stats?user_id=&session_id=`: counts per kind, procedures, sessions, review backlog."""

    class StatsParamsSerializer(ConsistencyParamsSerializer):
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
        parameters=[StatsParamsSerializer, CONSISTENCY_PARAMETER],
        responses={200: StatsOutputSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        params = self.StatsParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        values = dict(params.validated_data)
        consistency = values.pop("consistency")
        tenant = tenant_of(request)
        report = run_read(lambda: stats_get(tenant=tenant, **values), consistency=consistency)
        return Response(self.StatsOutputSerializer(report).data)
