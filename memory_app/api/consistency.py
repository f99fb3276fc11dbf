"""`consistency` on read operations: `eventual` (default) may be answered by a read replica,
`strong` always by the primary (memory_app/db_routing.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from drf_spectacular.utils import OpenApiExample, OpenApiParameter
from rest_framework import serializers
from rest_framework.request import Request

from memory_app.api.strict import StrictSerializer, validated_input
from memory_app.db_routing import CONSISTENCY_CHOICES, Consistency, run_read
from memory_app.models import Tenant
from memory_app.services.store.access import memory_access_record

T = TypeVar("T")
DEFAULT_CONSISTENCY: Consistency = "eventual"

CONSISTENCY_HELP = (
    "`eventual` (default): may be answered by a read replica within DATABASE_REPLICA_MAX_LAG_SECONDS "
    "of the primary. `strong`: answered by the primary, so it sees every write acknowledged before it."
)

CONSISTENCY_PARAMETER = OpenApiParameter(
    "consistency",
    str,
    enum=list(CONSISTENCY_CHOICES),
    default=DEFAULT_CONSISTENCY,
    description=CONSISTENCY_HELP,
    examples=[
        OpenApiExample("read your own writes", value="strong"),
        OpenApiExample("a replica may answer", value="eventual"),
    ],
)


class ConsistencyParamsSerializer(StrictSerializer):
    """The query parameters of a read operation that takes no others (a POST with a body)."""

    consistency = serializers.ChoiceField(
        choices=list(CONSISTENCY_CHOICES),
        required=False,
        default=DEFAULT_CONSISTENCY,
        help_text=CONSISTENCY_HELP,
    )


def read_with_consistency(request: Request, fn: Callable[[], T]) -> T:
    """Run the read of an operation whose only query parameter is `consistency` (a bad value is a 400)."""
    consistency = DEFAULT_CONSISTENCY
    if request.query_params:  # most calls have none: no serializer to run for the default
        consistency = validated_input(ConsistencyParamsSerializer, request.query_params)["consistency"]
    return run_read(fn, consistency=consistency)


def read_counting_access(request: Request, tenant: Tenant, fn: Callable[[], tuple[T, Sequence[int]]]) -> T:
    """`read_with_consistency` for a read that answers with memories: `fn` returns its body and the
    ids of the memories it showed, whose access is counted once the read is done (reads never write)."""
    body, shown = read_with_consistency(request, fn)
    memory_access_record(tenant=tenant, memory_ids=shown)
    return body
