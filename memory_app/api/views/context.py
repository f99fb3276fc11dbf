"""What an agent reads for a turn: `POST /api/v1/context` (facts to inject, within a token budget)
and `POST /api/v1/context/all` (the four kinds of memory together)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.consistency import CONSISTENCY_PARAMETER, read_counting_access
from memory_app.api.conversation_serializers import ID
from memory_app.api.scope import ScopeFields
from memory_app.api.serializers import ErrorSerializer, MemoryOutputSerializer, PlannedSerializer, represent
from memory_app.api.strict import StrictSerializer, validated_input
from memory_app.api.time_fields import QueryTimeFields, time_query_from, time_window_field
from memory_app.api.views.search import MAX_QUERY_CHARS, SearchFilterSerializer, filters_from
from memory_app.conf import context_config
from memory_app.models.shortterm import MessageRole
from memory_app.selectors.context.injection import ContextFact, memory_context
from memory_app.selectors.context.turn import ContextRequest, context_all, shown_memory_ids
from memory_app.selectors.memories import memory_supersedes_attach


class ContextFactSerializer(PlannedSerializer):
    planned_types = (ContextFact,)
    memory = MemoryOutputSerializer()
    text = serializers.CharField()
    score = serializers.FloatField(
        help_text="similarity x CONTEXT_SIMILARITY_WEIGHT + confidence x the other"
    )
    similarity = serializers.FloatField(
        allow_null=True,
        help_text=(
            "relevance to the context on an absolute scale (weighted cosine + BM25, not scaled to the "
            "best fact); null when ranked by confidence alone or when the search ran on full text only"
        ),
    )
    member_ids = serializers.ListField(child=serializers.IntegerField())


class ContextMessageSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=MessageRole.choices)
    content = serializers.CharField(max_length=20_000, allow_blank=True)


class ContextApi(APIView):
    """`POST /api/v1/context`: the facts most worth injecting for a conversation, within a token budget."""

    class ContextInputSerializer(QueryTimeFields, ScopeFields):
        query = serializers.CharField(
            required=False, default="", allow_blank=True, max_length=MAX_QUERY_CHARS
        )
        # many=True hands max_length to the ListSerializer it builds; the stubs type the child's arguments.
        messages = ContextMessageSerializer(  # type: ignore[call-arg]
            many=True, required=False, default=list, max_length=500
        )
        user_turns = serializers.IntegerField(required=False, default=3, min_value=1, max_value=50)
        max_tokens = serializers.IntegerField(required=False, min_value=1, max_value=1_000_000)
        model = serializers.CharField(required=False, max_length=100, allow_blank=True)
        filters = SearchFilterSerializer(required=False)

    class ContextOutputSerializer(serializers.Serializer):
        # DRF's serializer metaclass moves declared fields off the class, so this field
        # named "context" does not replace Field.context; the stubs cannot see that.
        context = serializers.CharField(allow_blank=True)  # type: ignore[assignment]
        tokens = serializers.IntegerField()
        query = serializers.CharField(allow_blank=True)
        facts = ContextFactSerializer(many=True)
        degraded = serializers.ListField(child=serializers.CharField(), help_text="as in search")
        time_window = time_window_field()

    @extend_schema(
        summary="Facts to inject for a conversation, within a token budget",
        description=(
            "The query, or else the last `user_turns` user messages with the replies after them, is "
            "searched (dedup on); facts rank by similarity and confidence and are packed as `- fact` "
            "lines until `max_tokens` (counted with the `model`'s tokenizer) would be exceeded. A fact "
            "less similar than CONTEXT_RELEVANCE_FLOOR is left out: a query unrelated to every memory "
            "gets an empty context. Name the user with `user_id` (as in search)."
        ),
        parameters=[CONSISTENCY_PARAMETER],
        request=ContextInputSerializer,
        responses={200: ContextOutputSerializer},
        examples=[
            OpenApiExample(
                "context for the last turns",
                request_only=True,
                value={
                    "messages": [{"role": "user", "content": "Plan my workouts for next week"}],
                    "max_tokens": 300,
                    "user_id": "u1",
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        values = validated_input(self.ContextInputSerializer, request.data)
        tenant = tenant_of(request)

        def context() -> tuple[dict[str, Any], list[int]]:
            result = memory_context(
                tenant=tenant,
                filters=filters_from(values["filters"]),
                query=values["query"],
                messages=[dict(m) for m in values["messages"]],
                user_turns=values["user_turns"],
                max_tokens=values.get("max_tokens"),
                model=values.get("model") or None,
                time_query=time_query_from(values),
            )
            memory_supersedes_attach(tenant=tenant, memories=[fact.memory for fact in result.facts])
            body = {
                "context": result.text,
                "tokens": result.tokens,
                "query": result.query,
                "facts": result.facts,
                "degraded": list(result.degraded),
                "time_window": result.time_window,
            }
            shown = [i for fact in result.facts for i in fact.member_ids]
            return represent(self.ContextOutputSerializer, body), shown

        return Response(read_counting_access(request, tenant, context))


class PartErrorSerializer(serializers.Serializer):
    part = serializers.CharField()
    code = serializers.CharField()
    message = serializers.CharField()


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
        values = validated_input(self.ContextAllInputSerializer, request.data)
        tenant = tenant_of(request)

        def context() -> tuple[Any, list[int]]:
            result = context_all(tenant=tenant, request=ContextRequest(**values))
            return represent(self.ContextAllOutputSerializer, result), shown_memory_ids(result)

        return Response(read_counting_access(request, tenant, context))
