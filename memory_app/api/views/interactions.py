"""`POST /api/v1/interactions` and `/interactions/batch`: what an agent writes every turn."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.conversation_serializers import (
    InteractionBatchInputSerializer,
    InteractionInputSerializer,
)
from memory_app.api.serializers import ErrorSerializer, represent
from memory_app.api.strict import validated_input
from memory_app.api.views.procedures import ProcedureOutputSerializer
from memory_app.api.views.sessions import SessionOutputSerializer
from memory_app.services.kinds.interactions import InteractionInput, interaction_store


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
        values = validated_input(self.InteractionInputSerializer, request.data)
        result = interaction_store(tenant=tenant_of(request), data=InteractionInput(**values))
        return Response(represent(self.InteractionOutputSerializer, result), status=201)


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
        values = validated_input(InteractionBatchInputSerializer, request.data)
        tenant = tenant_of(request)
        results = [
            interaction_store(tenant=tenant, data=InteractionInput(**item)) for item in values["interactions"]
        ]
        output = [represent(InteractionsApi.InteractionOutputSerializer, result) for result in results]
        return Response({"results": output}, status=201)
