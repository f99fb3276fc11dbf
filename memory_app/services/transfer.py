"""Export and import of a whole tenant as JSONL, lossless including lineage.

One JSON object per line, in dependency order: a header (format, version), every memory (all columns
but the generated tsvector; vectors as lists of float32 values, which JSON round-trips exactly), every
change with its sources and their snapshots, kept-apart pairs, review clusters with members and their
state, then (version 2) procedures, sessions with their messages and agent profiles.
On import every id is remapped (memories, changes, links inside snapshots), so an undo of an
imported change restores the imported rows exactly as the original undo would have.

Idempotent: a record the tenant already holds is skipped, found by its natural key (a memory by its
scope, kind, exact text and creation time; a change by its result and time; a pair by its two
memories; a cluster by its scope, time and members; the other kinds by their unique keys). Importing a
file twice, or into the tenant it came from, adds nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import DataError, IntegrityError, transaction
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
from memory_app.selectors.transfer import (
    CHANGE_FIELDS,
    CLUSTER_FIELDS,
    FORMAT,
    READABLE_VERSIONS,
    VERSION,
    memory_fields,
)
from memory_app.services.rows.tokens import memory_tokens_save
from memory_app.services.store.validation import metadata_problems
from memory_app.services.transfer_kinds import agent_profile_import, procedure_import, session_import

KINDS = ("memory", "change", "kept_apart", "cluster", "procedure", "session", "agent_profile")
KIND_IMPORTS = {
    "procedure": procedure_import,
    "session": session_import,
    "agent_profile": agent_profile_import,
}


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


def _any_when(value: Any, *, record: str, name: str, required: bool) -> dt.datetime | None:
    return (_required_when if required else _when)(value, record=record, name=name)


@dataclass
class ImportReport:
    """Records per type: written, and skipped because the tenant already held them."""

    imported: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    version: int = VERSION


MEMORY_KEY = ("user_id", "agent_id", "namespace", "session_id", "kind", "text", "created_at")


def _memory_key(values: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(values[name] for name in MEMORY_KEY)


def _existing_memories(tenant: Tenant, memories: list[Memory]) -> dict[tuple[Any, ...], list[int]]:
    """The tenant's rows with the natural key of one of `memories`, oldest first (one query per batch).
    A key may hold several rows (a store-time merge writes the incoming memory and a result keeping
    its text at the same instant): the file's records with that key take them in order."""
    created = {m.created_at for m in memories}
    rows = (
        Memory.objects.filter(tenant=tenant, created_at__in=created).order_by("pk").values("pk", *MEMORY_KEY)
    )
    found: dict[tuple[Any, ...], list[int]] = {}
    for row in rows:
        found.setdefault(_memory_key(row), []).append(row["pk"])
    return found


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


def _restore_columns(tenant: Tenant, rows: list[tuple[int, dt.datetime | None, int | None]]) -> None:
    """updated_at (auto_now overwrote it at insert) and superseded_by, one UPDATE per batch."""
    if not rows:
        return
    table = Memory._meta.db_table
    execute(
        f"UPDATE {table} AS m SET updated_at = v.u, superseded_by_id = v.s "
        "FROM unnest(%s::bigint[], %s::timestamptz[], %s::bigint[]) AS v(id, u, s) "
        "WHERE m.tenant_id = %s AND m.id = v.id",
        [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], tenant.pk],
    )


@transaction.atomic
def memory_import_records(
    *, tenant: Tenant, records: Iterable[dict[str, Any]], batch_size: int = 1000
) -> ImportReport:
    """Insert exported records into `tenant` (all or nothing), skipping what it already holds."""
    try:
        return _import(tenant, records, batch_size)
    except KeyError as exc:
        raise ApplicationError(f"the file refers to id {exc.args[0]} that it does not contain") from exc


@transaction.atomic
def tenant_import(*, tenant: Tenant, records: Iterable[dict[str, Any]], apply: bool) -> ImportReport:
    """The import of `POST /api/v1/import` and `manage.py import_memories`: a dry run (`apply`
    False) runs every insert and check, then rolls back, so every error shows and nothing stays."""
    try:
        # A savepoint, so a record the database refuses leaves the caller's transaction usable.
        with transaction.atomic():
            report = memory_import_records(tenant=tenant, records=records)
    except (DataError, IntegrityError) as exc:
        raise ApplicationError(f"the database refused a record: {str(exc).splitlines()[0]}") from exc
    except (TypeError, ValueError, AttributeError) as exc:
        # A value of the wrong shape where the format has a list, an object or a number.
        raise ApplicationError(f"a record has a value of the wrong type: {exc}") from exc
    if not apply:
        transaction.set_rollback(True)
    return report


class _Importer:
    def __init__(self, tenant: Tenant, batch_size: int) -> None:
        self.tenant, self.batch_size = tenant, batch_size
        self.ids: dict[int, int] = {}
        self.change_ids: dict[int, int] = {}
        self.pending: list[tuple[dict[str, Any], Memory]] = []
        self.links: list[tuple[int, Any, Any]] = []
        self.seen_keys: dict[tuple[Any, ...], int] = {}
        self.report = ImportReport()
        self.users = _Users()

    def count(self, kind: str, created: bool) -> None:
        (self.report.imported if created else self.report.skipped)[kind] += 1

    def flush(self) -> None:
        tenant, pending = self.tenant, self.pending
        existing = _existing_memories(tenant, [m for _, m in pending])
        fresh = []
        for record, memory in pending:
            key = _memory_key(memory.__dict__)
            # The n-th record of the file with this key is the tenant's n-th row with it, if any.
            nth = self.seen_keys.get(key, 0)
            self.seen_keys[key] = nth + 1
            rows = existing.get(key, [])
            if nth < len(rows):
                self.ids[record["id"]] = rows[nth]
                self.count("memory", False)
            else:
                fresh.append((record, memory))
        Memory.objects.bulk_create([m for _, m in fresh])
        # The file carries no token vectors: those the encoder holds are kept, the rest are computed
        # by the judge when needed or by `manage.py reindex --tokens`.
        memory_tokens_save(tenant=tenant, memories=[(m.pk, m.text) for _, m in fresh])
        for record, memory in fresh:
            self.ids[record["id"]] = memory.pk
            self.count("memory", True)
            # auto_now replaced updated_at at insert; the file's value is put back afterwards
            updated = _required_when(record["updated_at"], record=f"memory {record['id']}", name="updated_at")
            self.links.append((memory.pk, updated, record["superseded_by_id"]))
        pending.clear()

    def change(self, record: dict[str, Any], what: str) -> bool:
        created_at = _required_when(record["created_at"], record=what, name="created_at")
        result_id = self.ids[record["result_id"]]
        known = (
            MemoryChange.objects.filter(
                tenant=self.tenant, result_id=result_id, operation=record["operation"], created_at=created_at
            )
            .values_list("pk", flat=True)
            .first()
        )
        if known is not None:
            self.change_ids[record["id"]] = known
            return False
        change = MemoryChange.objects.create(
            tenant=self.tenant,
            result_id=result_id,
            **{name: record[name] for name in CHANGE_FIELDS if name not in ("created_at", "undone_at")},
            created_at=created_at,
            undone_at=_when(record["undone_at"], record=what, name="undone_at"),
            actor_user=self.users.get(record.get("actor_user")),
            undone_by=self.users.get(record.get("undone_by")),
        )
        self.change_ids[record["id"]] = change.pk
        MemoryChangeSource.objects.bulk_create(
            [
                MemoryChangeSource(
                    change=change,
                    memory_id=self.ids[s["memory_id"]],
                    snapshot=_remap_snapshot(s["snapshot"], self.ids, self.tenant),
                )
                for s in record["sources"]
            ]
        )
        return True

    def kept_apart(self, record: dict[str, Any], what: str) -> bool:
        low, high = sorted((self.ids[record["memory_low_id"]], self.ids[record["memory_high_id"]]))
        if KeptApartPair.objects.filter(tenant=self.tenant, memory_low_id=low, memory_high_id=high).exists():
            return False
        KeptApartPair.objects.create(
            tenant=self.tenant,
            memory_low_id=low,
            memory_high_id=high,
            created_at=_required_when(record["created_at"], record=what, name="created_at"),
            created_by=self.users.get(record.get("created_by")),
        )
        return True

    def cluster(self, record: dict[str, Any], what: str) -> bool:
        values = {name: record[name] for name in CLUSTER_FIELDS}
        values["created_at"] = _required_when(values["created_at"], record=what, name="created_at")
        values["resolved_at"] = _when(values["resolved_at"], record=what, name="resolved_at")
        members = [(self.ids[m["memory_id"]], m["distance"]) for m in record["members"]]
        same = DuplicateCluster.objects.filter(
            tenant=self.tenant,
            user_id=values["user_id"],
            namespace=values["namespace"],
            kind=values["kind"],
            created_at=values["created_at"],
        ).prefetch_related("members")
        for candidate in same:
            if {m.memory_id for m in candidate.members.all()} == {pk for pk, _ in members}:
                return False
        cluster = DuplicateCluster.objects.create(
            tenant=self.tenant, resolved_by=self.users.get(record.get("resolved_by")), **values
        )
        ClusterMember.objects.bulk_create(
            [ClusterMember(cluster=cluster, memory_id=pk, distance=distance) for pk, distance in members]
        )
        # Through rows written directly: `changes.set()` would first read the (empty) relation.
        through = DuplicateCluster.changes.through
        through.objects.bulk_create(
            [
                through(duplicatecluster=cluster, memorychange_id=self.change_ids[c])
                for c in record["change_ids"]
            ]
        )
        return True

    def restore_links(self) -> None:
        ids = self.ids
        _restore_columns(
            self.tenant,
            [(pk, updated, None if link is None else ids[link]) for pk, updated, link in self.links],
        )


def _import(tenant: Tenant, records: Iterable[dict[str, Any]], batch_size: int) -> ImportReport:
    importer = _Importer(tenant, batch_size)
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise ApplicationError(f"line {number}: not a JSON object")
        kind = record.get("type")
        if number == 1:
            if (
                kind != "header"
                or record.get("format") != FORMAT
                or record.get("version") not in READABLE_VERSIONS
            ):
                raise ApplicationError(f"not an {FORMAT} version {VERSION} file (first line)")
            importer.report.version = record["version"]
            continue
        if kind == "memory":
            importer.pending.append((record, _memory_from(record, tenant)))
            if len(importer.pending) >= importer.batch_size:
                importer.flush()
            continue
        if importer.pending:
            importer.flush()
        what = f"{kind} {record.get('id', number)}"
        if kind == "change":
            created = importer.change(record, what)
        elif kind == "kept_apart":
            created = importer.kept_apart(record, what)
        elif kind == "cluster":
            created = importer.cluster(record, what)
        elif kind in KIND_IMPORTS:
            created = KIND_IMPORTS[kind](tenant=tenant, record=record, when=_any_when)
        else:
            raise ApplicationError(f"line {number}: unknown record type {kind!r}")
        importer.count(kind, created)
    if importer.pending:
        importer.flush()
    importer.restore_links()
    return importer.report
