"""Reads for background compaction: the scopes of a tenant and one scope's vectors in one pass."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from django.db.models import Count

from memory_app.db import copy_out
from memory_app.models import Memory, Tenant
from memory_app.models.memory import MemoryStatus

_HEADER = 19  # PGCOPY signature (11) + flags (4) + header extension length (4)


@lru_cache(maxsize=4)
def _row(width: int) -> np.dtype:
    """A COPY BINARY row: field count (int16), then int32 length + int8 id, int32 length + vector
    (a halfvec: int16 dim, int16 unused, dim x float2), all big-endian."""
    return np.dtype(
        [
            ("nfields", ">i2"),
            ("id_len", ">i4"),
            ("id", ">i8"),
            ("vec_len", ">i4"),
            ("dim", ">i2"),
            ("unused", ">i2"),
            ("vec", ">f2", (width,)),
        ]
    )


# Where the first row's vector width is: after the field count, the id and the vector's length.
_DIM_OFFSET = 2 + 4 + 8 + 4


@dataclass(frozen=True, order=True)
class ScopeKey:
    tenant_id: int
    user_id: str
    namespace: str
    kind: str

    def as_list(self) -> list[str | int]:
        return [self.tenant_id, self.user_id, self.namespace, self.kind]

    def label(self) -> str:
        user = self.user_id or "-"
        return f"tenant={self.tenant_id} user={user} namespace={self.namespace} kind={self.kind}"


def compaction_scopes(
    *,
    tenant: Tenant,
    user_id: str | None = None,
    namespace: str | None = None,
    kind: str | None = None,
    after: ScopeKey | None = None,
) -> list[tuple[ScopeKey, int]]:
    """The tenant's scopes with at least two active embedded rows, in key order, with row counts."""
    qs = Memory.objects.filter(tenant=tenant, status=MemoryStatus.ACTIVE, embedding__isnull=False)
    if user_id is not None:
        qs = qs.filter(user_id=user_id)
    if namespace is not None:
        qs = qs.filter(namespace=namespace)
    if kind is not None:
        qs = qs.filter(kind=kind)

    rows = (
        qs.values_list("user_id", "namespace", "kind")
        .annotate(n=Count("id"))
        .filter(n__gte=2)
        .order_by("user_id", "namespace", "kind")
    )
    scopes = [(ScopeKey(tenant.pk, u, ns, k), n) for u, ns, k, n in rows]
    if after is not None:
        scopes = [(s, n) for s, n in scopes if s > after]
    return scopes


def scope_vectors(*, tenant: Tenant, scope: ScopeKey) -> tuple[np.ndarray, np.ndarray]:
    """(ids, vectors) of the scope's active embedded rows, read with one COPY BINARY.

    One streamed read parsed by numpy instead of a Python object per row: the read is then a small
    part of compaction even for a 100 k-row scope.
    """
    if scope.tenant_id != tenant.pk:
        raise ValueError("scope belongs to another tenant")
    table = Memory._meta.db_table
    query = (
        f"COPY (SELECT id, embedding FROM {table} WHERE tenant_id = %s AND user_id = %s "
        "AND namespace = %s AND kind = %s AND status = 'active' AND embedding IS NOT NULL "
        "ORDER BY id) TO STDOUT (FORMAT BINARY)"
    )
    buffer = copy_out(query, [tenant.pk, scope.user_id, scope.namespace, scope.kind])
    body = memoryview(buffer)[_HEADER : len(buffer) - 2]  # drop the header and the -1 trailer
    if not body:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    # One column type, one width for every row (the column's, which a resize may have changed).
    width = int.from_bytes(body[_DIM_OFFSET : _DIM_OFFSET + 2], "big")
    rows = np.frombuffer(body, dtype=_row(width))
    if rows.size and (rows["dim"] != width).any():
        raise ValueError("unexpected vector dimension in the memory table")
    return rows["id"].astype(np.int64), rows["vec"].astype(np.float32)
