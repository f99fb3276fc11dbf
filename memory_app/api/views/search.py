"""`POST /api/v1/memories/search`."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.consistency import CONSISTENCY_PARAMETER, read_counting_access
from memory_app.api.overrides import overrides_serializer
from memory_app.api.scope import ScopeFields
from memory_app.api.serializers import (
    MEMORY_FIELDS,
    MemoryOutputSerializer,
    PlannedSerializer,
    memory_fields_parse,
    memory_trimmed,
    represent,
)
from memory_app.api.strict import StrictSerializer, validated_input
from memory_app.api.time_fields import QueryTimeFields, time_query_from, time_window_field
from memory_app.models.memory import MemoryKind
from memory_app.overrides import SEARCH_KNOBS
from memory_app.selectors.memories import memory_supersedes_attach
from memory_app.selectors.search.options import MODES
from memory_app.selectors.search.query import SearchFilters, SearchHit, SearchOptions, memory_search

MAX_QUERY_CHARS = 4000
SearchOverrideFields = overrides_serializer("SearchOverrideFields", SEARCH_KNOBS)


class SearchFilterSerializer(StrictSerializer):
    user_id = serializers.CharField(
        required=False, max_length=255, allow_blank=True, help_text="an alias of the top-level user_id"
    )
    agent_id = serializers.CharField(
        required=False, max_length=255, allow_blank=True, help_text="an alias of the top-level agent_id"
    )
    namespace = serializers.CharField(required=False, max_length=255)
    session_id = serializers.CharField(
        required=False, max_length=255, allow_blank=True, help_text="an alias of the top-level session_id"
    )
    kind = serializers.ChoiceField(required=False, choices=MemoryKind.choices)
    topics_any = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=50
    )
    topics_all = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=50
    )
    entities = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, max_length=50
    )
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    event_after = serializers.DateTimeField(required=False)
    event_before = serializers.DateTimeField(required=False)
    min_confidence = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
    include_superseded = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        for low, high in (("created_after", "created_before"), ("event_after", "event_before")):
            if attrs.get(low) and attrs.get(high) and attrs[low] >= attrs[high]:
                raise serializers.ValidationError({high: [f"must be later than {low}"]})
        return attrs


def filters_from(data: dict[str, Any]) -> SearchFilters:
    values = dict(data)
    for key in ("topics_any", "topics_all", "entities"):
        values[key] = tuple(values.get(key) or ())
    return SearchFilters(**values)


class SearchHitSerializer(PlannedSerializer):
    planned_types = (SearchHit,)
    memory = MemoryOutputSerializer()
    text = serializers.CharField(
        help_text="display text: the memory's own (a deduplicated group shows its best-ranked member)"
    )
    score = serializers.FloatField()
    member_ids = serializers.ListField(child=serializers.IntegerField())
    cluster = serializers.IntegerField(allow_null=True)
    vector_score = serializers.FloatField(allow_null=True)
    lexical_score = serializers.FloatField(allow_null=True)


class MemorySearchApi(APIView):
    """`POST /api/v1/memories/search`: hybrid (vector + full text) search with the ranking pipeline."""

    class MemorySearchInputSerializer(QueryTimeFields, ScopeFields, SearchOverrideFields):  # type: ignore[misc,valid-type]
        query = serializers.CharField(max_length=MAX_QUERY_CHARS)
        limit = serializers.IntegerField(required=False, default=10, min_value=1, max_value=100)
        mode = serializers.ChoiceField(required=False, default="hybrid", choices=MODES)
        filters = SearchFilterSerializer(required=False)
        # "fields" does not replace Serializer.fields (DRF's metaclass moves declared fields off the class).
        fields = serializers.ListField(  # type: ignore[assignment]
            child=serializers.ChoiceField(choices=MEMORY_FIELDS),
            required=False,
            max_length=len(MEMORY_FIELDS),
            help_text="the memory fields each result returns (`id` always); left out, all of them",
        )

    class MemorySearchOutputSerializer(serializers.Serializer):
        mode = serializers.CharField()
        count = serializers.IntegerField()
        results = SearchHitSerializer(many=True)
        degraded = serializers.ListField(
            child=serializers.CharField(),
            help_text='what this search could not do, e.g. "query_embedding_failed: fulltext only"',
        )
        time_window = time_window_field()

    @extend_schema(
        summary="Search memories",
        description=(
            "Hybrid (vector + BM25 full text, fused), `vector` or `fulltext` search over one filtered scope, "
            "then the load-time pipeline: near-duplicate results collapsed into one entry (`member_ids`, "
            "`text` the group's merged text), DBSCAN `cluster` labels and MMR diversity. Options left out "
            "come from the agent's profile, then the SEARCH_* settings. Returned memories count as accessed. "
            "Name the user with `user_id` (`filters.user_id` is an alias): episodic memory is read only "
            "for a named user, or for every user with `all_users: true`; without either, only "
            "`kind: semantic` is allowed (400 naming `user_id` otherwise)."
        ),
        parameters=[CONSISTENCY_PARAMETER],
        request=MemorySearchInputSerializer,
        responses={200: MemorySearchOutputSerializer},
        examples=[
            OpenApiExample(
                "hybrid search in a user's scope",
                request_only=True,
                value={
                    "query": "what does the user eat?",
                    "limit": 5,
                    "mode": "hybrid",
                    "deduplicate": True,
                    "user_id": "u1",
                    "filters": {"kind": "episodic"},
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        values = validated_input(self.MemorySearchInputSerializer, request.data)
        options = SearchOptions(**{k.name: values.get(k.name) for k in SEARCH_KNOBS if k.per_request})
        fields = memory_fields_parse(values["fields"]) if "fields" in values else None
        tenant = tenant_of(request)

        def search() -> tuple[dict[str, Any], list[int]]:
            result = memory_search(
                tenant=tenant,
                query=values["query"],
                filters=filters_from(values["filters"]),
                limit=values["limit"],
                mode=values["mode"],
                options=options,
                time_query=time_query_from(values),
            )
            memory_supersedes_attach(tenant=tenant, memories=[hit.memory for hit in result.hits])
            body = {
                "mode": result.mode,
                "count": len(result.hits),
                "results": result.hits,
                "degraded": result.degraded,
                "time_window": result.time_window,
            }
            data = represent(self.MemorySearchOutputSerializer, body)
            if fields is not None:
                for hit in data["results"]:
                    hit["memory"] = memory_trimmed(hit["memory"], fields)
            return data, [i for hit in result.hits for i in hit.member_ids]

        return Response(read_counting_access(request, tenant, search))
