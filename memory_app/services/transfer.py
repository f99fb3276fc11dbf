"""Export and import of a tenant's memories as JSONL, lossless including lineage.

One JSON object per line, in dependency order: a header, every memory (all columns but the
generated tsvector; vectors as lists of float32 values, which JSON round-trips exactly), every
change with its sources and their snapshots, kept-apart pairs, and review clusters with members.
On import every id is remapped (memories, changes, links inside snapshots), so an undo of an
imported change restores the imported rows exactly as the original undo would have.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.dateparse import parse_datetime

from memory_app.db import execute
from memory_app.errors import ApplicationError
from memory_app.models import (
    ClusterMember,
    DuplicateCluster,
    KeptApartPair,
    Memory,
    MemoryChange,
    MemoryChangeSource,
    Tenant,
)
from memory_app.selectors.transfer import CHANGE_FIELDS, CLUSTER_FIELDS, FORMAT, VERSION, memory_fields
from memory_app.services.store.tokens import memory_tokens_save
from memory_app.services.store.validation import metadata_problems


def _when(value: Any, *, record: str, name: str) -> dt.datetime | None:
    """An optional timestamp of the file; a value that is not an ISO date and time is refused."""
    if value is None:
        return None
    try:
        parsed = parse_datetime(value) if isinstance(value, str) else None
    except ValueError:  # well formed but out of range, e.g. month 13
        parsed = None
    if parsed is None:
        raise ApplicationError(f"{record}: {name} {value!r} is not an ISO date and time")
    return parsed


def _required_when(value: Any, *, record: str, name: str) -> dt.datetime:
    """A timestamp the database requires (NOT NULL): missing is a mistake in the file, named here
    rather than left to the database as an IntegrityError."""
    parsed = _when(value, record=record, name=name)
    if parsed is None:
        raise ApplicationError(f"{record}: {name} is missing")
    return parsed


def _memory_from(record: dict[str, Any], tenant: Tenant) -> Memory:
    fields = {}
    for name in memory_fields():
        if name not in record:
            raise ApplicationError(f"memory {record.get('id')}: field {name!r} is missing")
        fields[name] = record[name]
    what = f"memory {record.get('id')}"
    for name in ("created_at", "updated_at"):
        fields[name] = _required_when(fields[name], record=what, name=name)
    for name in ("last_accessed_at", "expires_at", "event_date"):
        fields[name] = _when(fields[name], record=what, name=name)
    if problems := metadata_problems(fields["metadata"]):
        raise ApplicationError(f"{what}: metadata {problems[0]}", fields={"metadata": problems})
    if fields["embedding"] is not None:
        fields["embedding"] = np.asarray(fields["embedding"], dtype=np.float32)
    return Memory(tenant=tenant, **fields)


class _Users:
    def __init__(self) -> None:
        self.model = get_user_model()
        self.cache: dict[str, Any] = {}

    def get(self, username: str | None) -> Any:
        if username is None:
            return None
        if username not in self.cache:
            self.cache[username] = self.model.objects.filter(**{self.model.USERNAME_FIELD: username}).first()
        return self.cache[username]


def _remap_snapshot(snapshot: dict[str, Any], ids: dict[int, int], tenant: Tenant) -> dict[str, Any]:
    out = dict(snapshot)
    if out.get("id") is not None:
        out["id"] = ids[out["id"]]
    if out.get("superseded_by_id") is not None:
        out["superseded_by_id"] = ids[out["superseded_by_id"]]
    if "tenant_id" in out:
        out["tenant_id"] = tenant.pk
    return out


def _restore_columns(rows: list[tuple[int, dt.datetime | None, int | None]]) -> None:
    """updated_at (auto_now overwrote it at insert) and superseded_by, one UPDATE per batch."""
    if not rows:
        return
    table = Memory._meta.db_table
    execute(
        f"UPDATE {table} AS m SET updated_at = v.u, superseded_by_id = v.s "
        "FROM unnest(%s::bigint[], %s::timestamptz[], %s::bigint[]) AS v(id, u, s) WHERE m.id = v.id",
        [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]],
    )


@transaction.atomic
def memory_import_records(
    *, tenant: Tenant, records: Iterable[dict[str, Any]], batch_size: int = 1000
) -> dict[str, int]:
    """Insert exported records into `tenant` (all or nothing); returns counts per record type."""
    try:
        return _import(tenant, records, batch_size)
    except KeyError as exc:
        raise ApplicationError(f"the file refers to id {exc.args[0]} that it does not contain") from exc


def _import(tenant: Tenant, records: Iterable[dict[str, Any]], batch_size: int) -> dict[str, int]:
    ids: dict[int, int] = {}
    change_ids: dict[int, int] = {}
    pending: list[tuple[dict[str, Any], Memory]] = []
    links: list[tuple[int, Any, Any]] = []
    counts = {"memory": 0, "change": 0, "kept_apart": 0, "cluster": 0}
    users = _Users()

    def flush() -> None:
        Memory.objects.bulk_create([m for _, m in pending])
        # The file carries no token vectors: those the encoder holds are kept, the rest are computed
        # by the judge when needed or by `manage.py reindex --tokens`.
        memory_tokens_save(tenant=tenant, memories=[(m.pk, m.text) for _, m in pending])
        for record, memory in pending:
            ids[record["id"]] = memory.pk
            # auto_now replaced updated_at at insert; the file's value is put back afterwards
            updated = _required_when(record["updated_at"], record=f"memory {record['id']}", name="updated_at")
            links.append((memory.pk, updated, record["superseded_by_id"]))
        pending.clear()

    for number, record in enumerate(records, start=1):
        kind = record.get("type")
        if number == 1:
            if kind != "header" or record.get("format") != FORMAT or record.get("version") != VERSION:
                raise ApplicationError(f"not an {FORMAT} version {VERSION} file (first line)")
            continue
        if kind == "memory":
            pending.append((record, _memory_from(record, tenant)))
            counts["memory"] += 1
            if len(pending) >= batch_size:
                flush()
            continue
        if pending:
            flush()
        what = f"{kind} {record.get('id', number)}"
        if kind == "change":
            change = MemoryChange.objects.create(
                tenant=tenant,
                result_id=ids[record["result_id"]],
                **{name: record[name] for name in CHANGE_FIELDS if name not in ("created_at", "undone_at")},
                created_at=_required_when(record["created_at"], record=what, name="created_at"),
                undone_at=_when(record["undone_at"], record=what, name="undone_at"),
                actor_user=users.get(record.get("actor_user")),
                undone_by=users.get(record.get("undone_by")),
            )
            change_ids[record["id"]] = change.pk
            MemoryChangeSource.objects.bulk_create(
                [
                    MemoryChangeSource(
                        change=change,
                        memory_id=ids[s["memory_id"]],
                        snapshot=_remap_snapshot(s["snapshot"], ids, tenant),
                    )
                    for s in record["sources"]
                ]
            )
        elif kind == "kept_apart":
            low, high = sorted((ids[record["memory_low_id"]], ids[record["memory_high_id"]]))
            KeptApartPair.objects.create(
                tenant=tenant,
                memory_low_id=low,
                memory_high_id=high,
                created_at=_required_when(record["created_at"], record=what, name="created_at"),
                created_by=users.get(record.get("created_by")),
            )
        elif kind == "cluster":
            values = {name: record[name] for name in CLUSTER_FIELDS}
            values["created_at"] = _required_when(values["created_at"], record=what, name="created_at")
            values["resolved_at"] = _when(values["resolved_at"], record=what, name="resolved_at")
            cluster = DuplicateCluster.objects.create(
                tenant=tenant, resolved_by=users.get(record.get("resolved_by")), **values
            )
            ClusterMember.objects.bulk_create(
                [
                    ClusterMember(cluster=cluster, memory_id=ids[m["memory_id"]], distance=m["distance"])
                    for m in record["members"]
                ]
            )
            cluster.changes.set([change_ids[c] for c in record["change_ids"]])
        else:
            raise ApplicationError(f"line {number}: unknown record type {kind!r}")
        counts[kind] += 1
    if pending:
        flush()
    _restore_columns([(pk, updated, None if link is None else ids[link]) for pk, updated, link in links])
    return counts
