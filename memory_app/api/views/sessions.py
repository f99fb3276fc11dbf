from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.overrides import knob_field
from memory_app.api.serializers import ErrorSerializer, represent
from memory_app.api.strict import StrictSerializer, validated_input
from memory_app.models import ConversationSession, SessionMessage
from memory_app.models.shortterm import MessageRole
from memory_app.overrides import SESSION_KNOBS
from memory_app.selectors.kinds.sessions import session_get, session_messages
from memory_app.services.kinds.sessions import MessageInput, session_append, session_delete

MAX_MESSAGES_PER_CALL = 200


class MessageSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=MessageRole.choices)
    content = serializers.CharField(trim_whitespace=False, max_length=1_000_000)
    created_at = serializers.DateTimeField(required=False, help_text="when it was said (now when absent)")
    speaker = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        max_length=255,
        help_text="who said it in a multi-party chat (the summary names it; default: the role)",
    )
    message_id = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=255, help_text="the client's id of it"
    )


class MessageOutputSerializer(serializers.ModelSerializer):
    speaker = serializers.CharField(help_text="who said it in a multi-party chat; blank: the role says it")
    message_id = serializers.CharField(
        source="client_message_id", help_text="the client's id of the message; blank when it gave none"
    )
    timestamp = serializers.DateTimeField(source="created_at", help_text="when it was said")

    class Meta:
        model = SessionMessage
        fields = [
            "position",
            "role",
            "speaker",
            "content",
            "message_id",
            "timestamp",
            "token_count",
            "created_at",
        ]
        read_only_fields = fields


class SessionOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = ConversationSession
        fields = [
            "session_id",
            "user_id",
            "agent_id",
            "summary",
            "trimmed_count",
            "token_count",
            "context_window_tokens",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class SessionMessagesApi(APIView):
    """`POST /api/v1/sessions/{session_id}/messages`: append one message or many (oldest first)."""

    class SessionAppendInputSerializer(StrictSerializer):
        messages = MessageSerializer(many=True, required=False)
        role = serializers.ChoiceField(choices=MessageRole.choices, required=False)
        content = serializers.CharField(trim_whitespace=False, required=False, max_length=1_000_000)
        user_id = serializers.CharField(required=False, default="", allow_blank=True, max_length=255)
        agent_id = serializers.CharField(required=False, default="", allow_blank=True, max_length=255)
        context_window_tokens = knob_field(
            SESSION_KNOBS[0],
            help_text=(
                "this session's context window in tokens, kept for later appends (default: the agent "
                "profile's session.context_window_tokens, else SESSION_CONTEXT_WINDOW_TOKENS)"
            ),
        )

        def validate(self, attrs: dict) -> dict:
            many = attrs.get("messages")
            one = "role" in attrs or "content" in attrs
            if many is not None and one:
                raise serializers.ValidationError("Give either `messages` or `role` and `content`.")
            if many is None:
                if not ("role" in attrs and "content" in attrs):
                    raise serializers.ValidationError("Give `messages` or both `role` and `content`.")
                many = [{"role": attrs["role"], "content": attrs["content"]}]
            if not many:
                raise serializers.ValidationError({"messages": ["Give at least one message."]})
            if len(many) > MAX_MESSAGES_PER_CALL:
                raise serializers.ValidationError({"messages": [f"At most {MAX_MESSAGES_PER_CALL}."]})
            attrs["messages"] = many
            return attrs

    class SessionAppendOutputSerializer(serializers.Serializer):
        session = SessionOutputSerializer()
        appended = MessageOutputSerializer(many=True)
        trimmed_now = serializers.IntegerField()
        summarized = serializers.BooleanField()
        summary_method = serializers.ChoiceField(
            choices=["llm", "extractive"],
            allow_null=True,
            help_text="how this append folded trimmed messages into the summary (null: it did not)",
        )

    @extend_schema(
        request=SessionAppendInputSerializer,
        responses={201: SessionAppendOutputSerializer, 400: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request, session_id: str) -> Response:
        v = validated_input(self.SessionAppendInputSerializer, request.data)
        result = session_append(
            tenant=tenant_of(request),
            session_id=session_id,
            messages=[
                MessageInput(
                    m["role"],
                    m["content"],
                    m.get("created_at"),
                    speaker=m.get("speaker", ""),
                    client_message_id=m.get("message_id", ""),
                )
                for m in v["messages"]
            ],
            user_id=v["user_id"],
            agent_id=v["agent_id"],
            context_window_tokens=v.get("context_window_tokens"),
        )
        return Response(represent(self.SessionAppendOutputSerializer, result), status=201)


class SessionDetailApi(APIView):
    """`GET /api/v1/sessions/{session_id}` (messages newest last) and `DELETE` (hard delete)."""

    class SessionGetParamsSerializer(StrictSerializer):
        limit = serializers.IntegerField(required=False, min_value=1, max_value=10_000)

    class SessionGetOutputSerializer(serializers.Serializer):
        session = SessionOutputSerializer()
        messages = MessageOutputSerializer(many=True)

    class SessionDeleteParamsSerializer(StrictSerializer):
        memories = serializers.BooleanField(
            required=False, default=False, help_text="also forget long-term memories stored from it"
        )

    class SessionDeleteOutputSerializer(serializers.Serializer):
        deleted = serializers.DictField(child=serializers.IntegerField())

    @extend_schema(
        parameters=[SessionGetParamsSerializer],
        responses={200: SessionGetOutputSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = validated_input(self.SessionGetParamsSerializer, request.query_params)
        session = session_get(tenant=tenant_of(request), session_id=session_id)
        messages = session_messages(session=session, limit=params.get("limit"))
        return Response(
            represent(self.SessionGetOutputSerializer, {"session": session, "messages": messages})
        )

    @extend_schema(
        parameters=[SessionDeleteParamsSerializer],
        responses={200: SessionDeleteOutputSerializer, 404: ErrorSerializer},
    )
    def delete(self, request: Request, session_id: str) -> Response:
        params = self.SessionDeleteParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        counts = session_delete(
            tenant=tenant_of(request), session_id=session_id, memories=params.validated_data["memories"]
        )
        return Response(self.SessionDeleteOutputSerializer({"deleted": counts}).data)
