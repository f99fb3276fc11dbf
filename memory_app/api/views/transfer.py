"""`GET /api/v1/export` and `POST /api/v1/import`: a whole tenant as versioned JSONL, the key's own.

The export streams one record per line as the selector reads them (memories in batches), so a large
tenant is never held in memory. The import reads the same format line by line; a dry run unless
`apply=true` (every check and insert runs, then rolls back). A body is capped by
API_MAX_REQUEST_BYTES; a larger file goes through `manage.py import_memories`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import exceptions, parsers, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_app.api.auth import tenant_of
from memory_app.api.serializers import ErrorSerializer
from memory_app.api.strict import StrictSerializer, depth_exceeds
from memory_app.selectors.transfer import FORMAT, VERSION, tenant_export_records
from memory_app.services.transfer import tenant_import

JSONL = "application/x-ndjson"
RECORD_SCHEMA = {
    "type": "object",
    "description": (
        f'One record per line. The first is the header ({{"type": "header", "format": "{FORMAT}", '
        f'"version": {VERSION}, ...}}); then memory, change, kept_apart, cluster, procedure, session '
        "(with its messages) and agent_profile records."
    ),
    "properties": {"type": {"type": "string"}},
    "required": ["type"],
    "additionalProperties": True,
}


def _lines(stream: Any) -> Iterator[dict[str, Any]]:
    limit = settings.API_MAX_JSON_DEPTH
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise exceptions.ParseError(f"line {number}: not JSON ({exc})") from exc
        if depth_exceeds(record, limit):
            raise exceptions.ParseError(f"line {number}: JSON nested deeper than {limit} levels.")
        yield record


class JsonLinesParser(parsers.BaseParser):
    """JSONL, read line by line as the import consumes it."""

    media_type = JSONL

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        if stream is None:
            return iter(())
        return _lines(line.decode("utf-8", errors="replace") for line in stream)


class ImportParamsSerializer(StrictSerializer):
    apply = serializers.BooleanField(
        required=False, default=False, help_text="true: commit the import (default: a dry run)"
    )


class ImportOutputSerializer(serializers.Serializer):
    applied = serializers.BooleanField(help_text="false: a dry run, nothing was written")
    version = serializers.IntegerField(help_text="the file's format version")
    imported = serializers.DictField(child=serializers.IntegerField(), help_text="records written, per type")
    skipped = serializers.DictField(
        child=serializers.IntegerField(), help_text="records the tenant already held, per type"
    )


class ExportApi(APIView):
    @extend_schema(
        operation_id="tenant_export",
        summary="Export the key's tenant as JSONL (streamed)",
        description=(
            "Every memory with its vector, lineage (changes with their source snapshots), kept-apart "
            "pairs, review clusters with their state, procedures, sessions with their messages and "
            "agent profiles, one JSON record per line. `POST /api/v1/import` (or `manage.py "
            "import_memories`) reads it back into any tenant."
        ),
        responses={(200, JSONL): OpenApiResponse(response=RECORD_SCHEMA)},
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        tenant = tenant_of(request)
        lines = (
            json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
            for record in tenant_export_records(tenant=tenant)
        )
        response = StreamingHttpResponse(lines, content_type=JSONL)
        response["Content-Disposition"] = f'attachment; filename="{tenant.slug}.jsonl"'
        return response


class ImportApi(APIView):
    parser_classes = [JsonLinesParser]

    @extend_schema(
        operation_id="tenant_import",
        summary="Import a JSONL export into the key's tenant (dry run unless apply=true)",
        description=(
            "The body is a file written by `GET /api/v1/export` (Content-Type application/x-ndjson). "
            "Ids are remapped; a record the tenant already holds is skipped, so a second import adds "
            "nothing. All or nothing: any bad record is a 400 naming it and nothing is written. A dry "
            "run (the default) runs every check and reports the counts, then rolls back."
        ),
        parameters=[ImportParamsSerializer],
        request={JSONL: {"type": "string", "description": "JSONL, one record per line"}},
        responses={200: ImportOutputSerializer, 400: ErrorSerializer},
        examples=[
            OpenApiExample(
                "dry run",
                response_only=True,
                value={
                    "applied": False,
                    "version": VERSION,
                    "imported": {"memory": 120, "session": 3},
                    "skipped": {"memory": 0, "session": 0},
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        params = ImportParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        apply = params.validated_data["apply"]
        records = cast(Iterator[dict[str, Any]], request.data)  # JsonLinesParser's lines
        report = tenant_import(tenant=tenant_of(request), records=records, apply=apply)
        data = {"applied": apply, "version": report.version, "imported": report.imported}
        return Response(ImportOutputSerializer({**data, "skipped": report.skipped}).data)
