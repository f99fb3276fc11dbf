from __future__ import annotations

from collections import Counter
from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.consistency import CONSISTENCY_PARAMETER, ConsistencyParamsSerializer
from memory_app.api.errors import flatten_errors
from memory_app.api.pagination import IdCursorPagination
from memory_app.api.serializers import (
    FIELDS_HELP,
    ErrorSerializer,
    MemoryOutputSerializer,
    MemoryPageSerializer,
    memory_fields_parse,
    memory_trimmed,
    represent,
)
from memory_app.api.store_serializers import (
    MemoryStoreInputSerializer,
    StoreOptionsSerializer,
    StoreOutcomeSerializer,
)
from memory_app.api.strict import bound_input, validated_input
from memory_app.conf import store_config
from memory_app.db_routing import run_read
from memory_app.errors import ApplicationError
from memory_app.models import Memory
from memory_app.models.memory import MemoryKind, MemoryStatus
from memory_app.overrides import StoreOverrides
from memory_app.selectors.memories import (
    MemoryFilters,
    memory_list,
    memory_supersedes_attach,
    with_supersedes,
)
from memory_app.services.store.types import MemoryInput, StoreOutcome
from memory_app.services.store.write import memory_store


class MemoryListFilterSerializer(ConsistencyParamsSerializer):
    user_id = serializers.CharField(required=False, max_length=255)
    agent_id = serializers.CharField(required=False, max_length=255)
    namespace = serializers.CharField(required=False, max_length=255)
    session_id = serializers.CharField(required=False, max_length=255)
    kind = serializers.ChoiceField(required=False, choices=MemoryKind.choices)
    status = serializers.ChoiceField(
        required=False, choices=[*MemoryStatus.values, "any"], default=MemoryStatus.ACTIVE
    )
    topic = serializers.CharField(required=False, max_length=100)
    entity = serializers.CharField(required=False, max_length=200)
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    fields = serializers.CharField(required=False, max_length=1000, help_text=FIELDS_HELP)  # type: ignore[assignment]

    def validate_fields(self, value: str) -> frozenset[str] | None:
        return memory_fields_parse(value)


def parse_store_items(payload: Any) -> tuple[list[MemoryInput], bool]:
    """One object or a list of them → MemoryInputs; every bad field of every item in one 400
    (`text`, or `items[3].text` for a list) before anything is stored."""
    many = isinstance(payload, list)
    if not many and not isinstance(payload, dict):
        raise ApplicationError("Expected a memory object or a list of memory objects.")
    raw_items = payload if many else [payload]
    limit = store_config().max_batch
    if many and not raw_items:
        raise ApplicationError("Give at least one memory.", fields={"items": ["This list may not be empty."]})
    if len(raw_items) > limit:
        raise ApplicationError(
            f"At most {limit} memories per request; got {len(raw_items)}. Nothing was stored.",
            fields={"items": [f"Ensure this list has no more than {limit} elements."]},
        )
    items: list[MemoryInput] = []
    errors: dict[str, Any] = {}
    for index, raw in enumerate(raw_items):
        serializer = bound_input(MemoryStoreInputSerializer, raw)
        if not serializer.is_valid():
            for name, messages in flatten_errors(serializer.errors).items():
                errors[f"items[{index}].{name}" if many else name] = messages
            continue
        data = dict(serializer.validated_data)
        data["topics"] = tuple(data.get("topics", ()))
        data["entities"] = tuple(data.get("entities", ()))
        items.append(MemoryInput(**data))
    if errors:
        where = f" at items {sorted({int(k[6:].split(']')[0]) for k in errors})}" if many else ""
        raise ApplicationError(f"Invalid input{where}; nothing was stored.", fields=errors)
    return items, many


def outcome_data(tenant: Any, outcomes: list[StoreOutcome]) -> list[dict[str, Any]]:
    # A row the store just inserted is shown as it was written (it supersedes nothing), unless a
    # later item of the same call touched it; the others (merged, superseding, duplicates) are read
    # back with what they replaced.
    touched = Counter(i for o in outcomes for i in (o.memory_id, *o.related_ids))
    memories: dict[int, Memory] = {}
    for o in outcomes:
        if o.row is not None and touched[o.memory_id] == 1:
            o.row.supersedes_ids = []  # type: ignore[attr-defined]
            memories[o.memory_id] = o.row
    unread = {o.memory_id for o in outcomes} - memories.keys()
    if unread:
        found = Memory.objects.filter(tenant=tenant, pk__in=unread)
        memories |= with_supersedes(found.defer("embedding", "search_vector"), tenant=tenant).in_bulk()
    return [
        represent(
            StoreOutcomeSerializer,
            {
                **{k: v for k, v in o.__dict__.items() if k != "row"},
                "related_ids": list(o.related_ids),
                "memory": memories.get(o.memory_id),
                "warnings": ([EMBEDDING_PENDING_WARNING] if o.embedding_pending else []) + list(o.warnings),
            },
        )
        for o in outcomes
    ]


EMBEDDING_PENDING_WARNING = (
    "embedding_pending: the embedding provider is unavailable; the memory is stored and found by "
    "full text now, by vector search once its embedding is filled in"
)

STORE_REQUEST = PolymorphicProxySerializer(
    component_name="MemoryStore",
    serializers=[MemoryStoreInputSerializer, MemoryStoreInputSerializer(many=True)],
    resource_type_field_name=None,
    many=False,
)
STORE_RESPONSE = PolymorphicProxySerializer(
    component_name="MemoryStoreResponse",
    serializers=[StoreOutcomeSerializer, StoreOutcomeSerializer(many=True)],
    resource_type_field_name=None,
    many=False,
)


class MemoryCollectionApi(APIView):
    """`GET /api/v1/memories`: list (paginated, filtered). `POST`: store one memory or a list."""

    @extend_schema(
        operation_id="memories_list",
        summary="List memories (newest first, cursor pages)",
        description=(
            "Filters combine with AND; `status` defaults to active (`any` for all). Follow `next` until it "
            "is null; `page_size` up to API_MAX_PAGE_SIZE."
        ),
        parameters=[
            MemoryListFilterSerializer,
            CONSISTENCY_PARAMETER,
            OpenApiParameter("cursor", str, description="opaque cursor from `next` or `previous`"),
            OpenApiParameter("page_size", int, description="rows per page (default API_PAGE_SIZE)"),
        ],
        responses={200: MemoryPageSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        params = MemoryListFilterSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = dict(params.validated_data)
        if data.get("status") == "any":
            data["status"] = None
        consistency = data.pop("consistency")
        fields = data.pop("fields", None)
        tenant = tenant_of(request)

        def page() -> Response:
            qs = memory_list(tenant=tenant, filters=MemoryFilters(**data))
            paginator = IdCursorPagination()
            rows = paginator.paginate_queryset(qs, request, view=self)
            assert rows is not None, "IdCursorPagination always returns a page"
            memory_supersedes_attach(tenant=tenant, memories=rows)
            results = [memory_trimmed(row, fields) for row in MemoryOutputSerializer(rows, many=True).data]
            return paginator.get_paginated_response(results)

        return run_read(page, consistency=consistency)

    @extend_schema(
        summary="Store memories with deduplication",
        description=(
            "Body: one memory object or a list (at most STORE_MAX_BATCH). Each input is deduplicated in "
            "its scope (tenant, user_id, namespace, kind): an identical text returns `duplicate_of`; a "
            "paraphrase or refinement is merged (`merged_into`, the sources kept in the lineage); a "
            "changed value supersedes the old one (`superseded`); an unsure judgement stores it and "
            "queues the pair for review (`queued_for_review`); otherwise `created`. Items of one list "
            "dedup against each other. A list answers with a list of outcomes in input order. "
            "201 when something was written, 200 when every input was an exact duplicate. "
            "Any invalid item is a 400 naming `items[i].field` and nothing is stored. An episodic "
            "memory (the default kind) needs the `user_id` it is about; semantic memory (shared "
            "knowledge) needs none."
        ),
        parameters=[StoreOptionsSerializer],
        request=STORE_REQUEST,
        responses={200: STORE_RESPONSE, 201: STORE_RESPONSE, 403: ErrorSerializer},
        examples=[
            OpenApiExample(
                "one", request_only=True, value={"text": "User prefers morning workouts", "user_id": "u1"}
            ),
            OpenApiExample(
                "batch",
                request_only=True,
                value=[
                    {"text": "User's dog is called Rex", "user_id": "u1"},
                    {"text": "Rex is a common dog name", "kind": "semantic"},
                ],
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        params = validated_input(StoreOptionsSerializer, request.query_params)
        items, many = parse_store_items(request.data)
        tenant = tenant_of(request)
        outcomes = memory_store(tenant=tenant, items=items, options=StoreOverrides(**params))
        data = outcome_data(tenant, outcomes)
        wrote = any(o.outcome != "duplicate_of" for o in outcomes)
        return Response(data if many else data[0], status=201 if wrote else 200)
