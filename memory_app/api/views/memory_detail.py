from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.serializers import ErrorSerializer, MemoryOutputSerializer
from memory_app.api.store_serializers import (
    FeedbackInputSerializer,
    LineageOutputSerializer,
    MemoryUpdateInputSerializer,
)
from memory_app.api.strict import StrictSerializer
from memory_app.errors import ApplicationError
from memory_app.models import Tenant
from memory_app.selectors.lineage.graph import memory_lineage
from memory_app.selectors.memories import memory_get, memory_supersedes_attach
from memory_app.services.store.edit import memory_delete, memory_feedback, memory_update
from memory_app.services.store.forget import memory_purge

# 401 and 503 everywhere, 400 where there is input: added by api/schema.add_error_responses.
READ_ERRORS = {404: ErrorSerializer}
ERRORS = {400: ErrorSerializer, 404: ErrorSerializer, 409: ErrorSerializer}


def _output(tenant: Tenant, memory_id: int) -> dict:
    memory = memory_get(tenant=tenant, memory_id=memory_id)  # 404 outside the tenant
    memory_supersedes_attach(tenant=tenant, memories=[memory])
    return MemoryOutputSerializer(memory).data


class MemoryDeleteParamsSerializer(StrictSerializer):
    purge = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "true: forget now. The row, the rows it replaced, the lineage snapshots and review records "
            "naming them, and their embedding-cache rows are hard-deleted at once (as "
            "`DELETE /users/{user_id}/memories` does), with no undo."
        ),
    )


class MemoryDetailApi(APIView):
    """`GET/PATCH/DELETE /api/v1/memories/{id}`."""

    @extend_schema(responses={200: MemoryOutputSerializer, **READ_ERRORS})
    def get(self, request: Request, memory_id: int) -> Response:
        return Response(_output(tenant_of(request), memory_id))

    @extend_schema(
        summary="Edit a memory",
        description=(
            "Metadata fields (topics, entities, metadata, pinned, confidence, expires_at, event and "
            "semantic fields) change in place. A new `text` is a new version: a new memory with the new "
            "text and the old one's other fields supersedes the old one, which stays in the lineage "
            "(undo the change to restore it); the response is the new memory, with a new id. A text "
            "differing only in case, punctuation or spacing is corrected in place. Deleted memories "
            "cannot be edited (409)."
        ),
        request=MemoryUpdateInputSerializer,
        responses={200: MemoryOutputSerializer, **ERRORS},
    )
    def patch(self, request: Request, memory_id: int) -> Response:
        params = MemoryUpdateInputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        if not params.validated_data:
            raise ApplicationError("Give at least one field to change.")
        tenant = tenant_of(request)
        memory = memory_update(tenant=tenant, memory_id=memory_id, changes=dict(params.validated_data))
        return Response(_output(tenant, memory.pk))

    @extend_schema(
        summary="Delete a memory (soft, or purged with purge=true)",
        description=(
            "Soft by default: sets status `deleted`; the row, its text and its lineage stay (undo, audit) "
            "until the expiry sweep hard-deletes it MEMORY_EXPIRY_GRACE_DAYS (default 30) days later. "
            "Repeating it is not an error. `purge=true` forgets it now: the row, the rows it replaced "
            "and every lineage snapshot or review record naming them are hard-deleted; a second purge "
            "is a 404."
        ),
        parameters=[MemoryDeleteParamsSerializer],
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, memory_id: int) -> Response:
        params = MemoryDeleteParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        if params.validated_data["purge"]:
            memory_purge(tenant=tenant_of(request), memory_id=memory_id)
        else:
            memory_delete(tenant=tenant_of(request), memory_id=memory_id)
        return Response(status=204)


class MemoryFeedbackApi(APIView):
    """`POST /api/v1/memories/{id}/feedback`."""

    @extend_schema(
        summary="Rate a memory helpful or harmful",
        description=(
            "helpful: helpful_count + 1, confidence moves MEMORY_FEEDBACK_STEP (default 0.1) of the way "
            "to 1, c + s(1 - c); harmful: harmful_count + 1, confidence moves the same fraction of the "
            "way to 0, c(1 - s). Confidence stays within 0..1."
        ),
        request=FeedbackInputSerializer,
        responses={200: MemoryOutputSerializer, **ERRORS},
    )
    def post(self, request: Request, memory_id: int) -> Response:
        params = FeedbackInputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        tenant = tenant_of(request)
        memory_feedback(tenant=tenant, memory_id=memory_id, signal=params.validated_data["signal"])
        return Response(_output(tenant, memory_id))


class MemoryLineageApi(APIView):
    """`GET /api/v1/memories/{id}/lineage`."""

    @extend_schema(
        summary="What a memory was made from and what replaced it",
        responses={200: LineageOutputSerializer, **READ_ERRORS},
    )
    def get(self, request: Request, memory_id: int) -> Response:
        lineage = memory_lineage(tenant=tenant_of(request), memory_id=memory_id)
        return Response(LineageOutputSerializer(lineage).data)
