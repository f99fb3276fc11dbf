from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.serializers import ErrorSerializer
from memory_app.api.store_serializers import ChangeUndoOutputSerializer
from memory_app.services.lineage.changes import memory_change_undo


class ChangeUndoApi(APIView):
    """`POST /api/v1/merges/{id}/undo`: undo a merge or a supersede (ids from store outcomes' change_id)."""

    @extend_schema(
        summary="Undo a merge or supersede",
        description=(
            "Restores the source memories exactly as they were before the change and, for a merge, "
            "retires the merged result (status deleted). Changes are undone newest first: undoing a "
            "merge whose result was consumed by a later change is a 409 naming it."
        ),
        request=None,
        responses={
            200: ChangeUndoOutputSerializer,
            401: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
        },
    )
    def post(self, request: Request, change_id: int) -> Response:
        change = memory_change_undo(tenant=tenant_of(request), change_id=change_id)
        data = {
            "id": change.pk,
            "operation": change.operation,
            "relation": change.relation,
            "result_id": change.result_id,
            "source_ids": sorted(change.sources.values_list("memory_id", flat=True)),
            "undone_at": change.undone_at,
        }
        return Response(ChangeUndoOutputSerializer(data).data)
