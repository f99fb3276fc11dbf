"""The operations commands: dry runs change nothing, --apply acts, and the export round trip."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django_celery_beat.models import PeriodicTask

from memory_app.db.vectors import half_precision
from memory_app.embeddings import embed_texts
from memory_app.models import DuplicateCluster, Memory, MemoryChange, Procedure, ReindexVector
from memory_app.models.memory import MemoryStatus
from memory_app.selectors.transfer import memory_export_records
from memory_app.services.lineage.changes import memory_change_undo, memory_supersede
from memory_app.services.maintenance.reindex import reindex_build
from tests.factories import ProcedureFactory, TenantFactory, unit_vector
from tests.factories.ops import put
from tests.factories.transfer import canonical_export, lineage_tenant


def run(*args: Any) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.django_db
def test_install_schedule_is_a_dry_run_by_default_and_idempotent_with_apply() -> None:
    assert "would create" in run("install_schedule")
    assert PeriodicTask.objects.filter(name__startswith="memory:").count() == 0
    run("install_schedule", "--apply")
    tasks = dict(
        PeriodicTask.objects.filter(name__startswith="memory:").values_list("task", "interval__every")
    )
    assert tasks == {
        "memory.compaction_periodic": 360,
        "memory.review_detection_periodic": 720,
        "memory.expiry_run": 60,
        "memory.search_indexes_periodic": 1440,
        "memory.embeddings_sweep": 10,
    }
    assert run("install_schedule", "--apply").count("(unchanged)") == 5
    assert PeriodicTask.objects.filter(name__startswith="memory:").count() == 5


@pytest.mark.django_db
def test_memory_stats_counts_one_tenant_only() -> None:
    tenant, other = TenantFactory(), TenantFactory()
    a = put(tenant, "first", unit_vector(1))
    b = put(tenant, "second", unit_vector(2))
    put(other, "elsewhere", unit_vector(3))
    memory_supersede(tenant=tenant, old_id=a.pk, new_id=b.pk)
    report = json.loads(run("memory_stats", "--tenant", tenant.slug, "--json"))
    (stats,) = report["tenants"]
    assert stats["memories"] == {"episodic": {"active": 1, "superseded": 1}}
    assert stats["changes"]["supersedes"] == 1
    assert report["memory_table_total_bytes"] > 0
    assert "2 memories" in run("memory_stats", "--tenant", tenant.slug)


@pytest.mark.django_db
def test_reindex_dry_run_changes_nothing_and_apply_switches_every_row_to_the_configured_model() -> None:
    tenant = TenantFactory()
    texts = ["User likes green tea", "User runs on Mondays", "Resting heart rate is 60-100 bpm"]
    rows = [put(tenant, t, unit_vector(i)) for i, t in enumerate(texts)]
    Memory.objects.filter(pk__in=[m.pk for m in rows]).update(embedding_model="old-model")
    memory_supersede(tenant=tenant, old_id=rows[0].pk, new_id=rows[1].pk)

    assert "3 to embed" in run("reindex")
    assert set(Memory.objects.values_list("embedding_model", flat=True)) == {"old-model"}

    out = run("reindex", "--apply", "--no-switch")
    assert "embedded 3" in out
    live = Memory.objects.get(pk=rows[0].pk)
    assert np.array_equal(
        np.asarray(live.embedding, dtype=np.float32), half_precision(unit_vector(0))
    )  # searches still see the old vectors
    assert ReindexVector.objects.count() == 3

    assert "switched 3" in run("reindex", "--apply")
    expected = embed_texts(texts, tenant=None)
    for memory, vector in zip(rows, expected, strict=True):
        memory.refresh_from_db()
        assert memory.embedding_model == "all-MiniLM-L6-v2"
        assert np.allclose(np.asarray(memory.embedding), vector, atol=1e-6)
    assert ReindexVector.objects.count() == 0
    assert Memory.objects.get(pk=rows[0].pk).status == MemoryStatus.SUPERSEDED


@pytest.mark.django_db
def test_reindex_re_embeds_procedure_patterns_of_another_model() -> None:
    tenant = TenantFactory()
    stale = ProcedureFactory(tenant=tenant, pattern="weekly progress report", embedding_model="old-model")
    stale.pattern_embedding = unit_vector(3)
    stale.save()

    assert "1 procedure patterns to embed" in run("reindex")
    assert Procedure.objects.get(pk=stale.pk).embedding_model == "old-model"

    assert "re-embedded 1 procedure patterns" in run("reindex", "--apply")
    stale.refresh_from_db()
    assert stale.embedding_model == "all-MiniLM-L6-v2"
    assert np.allclose(
        np.asarray(stale.pattern_embedding),
        embed_texts(["weekly progress report"], tenant=None)[0],
        atol=1e-6,
    )
    assert "re-embedded 0 procedure patterns" in run("reindex", "--apply")


@pytest.mark.django_db
def test_an_interrupted_reindex_resumes_without_embedding_rows_twice() -> None:
    tenant = TenantFactory()
    for i in range(5):
        put(tenant, f"memory number {i}", unit_vector(i))
    Memory.objects.update(embedding_model="old-model")
    seen: list[str] = []

    def flaky(texts: list[str]) -> np.ndarray:
        if seen:
            raise RuntimeError("provider went away")
        seen.extend(texts)
        return embed_texts(texts, tenant=None)

    with pytest.raises(RuntimeError):
        reindex_build(tenant=None, model="all-MiniLM-L6-v2", embed=flaky, batch_size=2)
    assert ReindexVector.objects.count() == 2
    calls: list[str] = []

    def counting(texts: list[str]) -> np.ndarray:
        calls.extend(texts)
        return embed_texts(texts, tenant=None)

    assert reindex_build(tenant=None, model="all-MiniLM-L6-v2", embed=counting, batch_size=2) == 3
    assert sorted(calls + seen) == sorted(f"memory number {i}" for i in range(5))


@pytest.mark.django_db(transaction=True)
def test_rebuild_indexes_lists_by_default_and_rebuilds_concurrently_with_apply() -> None:
    def oid() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 'memory_embedding_hnsw'::regclass::oid")
            return int(cursor.fetchone()[0])

    before = oid()
    out = run("rebuild_indexes")
    assert "memory_embedding_hnsw on memory_app_memory" in out and "dry run" in out
    assert oid() == before
    assert "rebuilt memory_embedding_hnsw" in run(
        "rebuild_indexes", "--apply", "--index", "memory_embedding_hnsw"
    )
    assert oid() != before  # a new index was built and swapped in
    with pytest.raises(CommandError):
        run("rebuild_indexes", "--index", "no_such_index")


def _lineage_tenant() -> Any:
    return lineage_tenant(TenantFactory())


@pytest.mark.django_db
def test_export_then_import_is_a_lossless_round_trip_including_lineage(tmp_path: Path) -> None:
    tenant = _lineage_tenant()
    path = tmp_path / "export.jsonl"
    run("export_memories", "--tenant", tenant.slug, "-o", str(path))
    original = [json.loads(line) for line in path.read_text().splitlines()]
    assert sum(r["type"] == "memory" for r in original) == 9

    out = run("import_memories", str(path), "--tenant", "copy", "--create-tenant")
    assert "dry run" in out
    assert not Memory.objects.filter(tenant__slug="copy").exists()

    run("import_memories", str(path), "--tenant", "copy", "--create-tenant", "--apply")
    from memory_app.models import Tenant

    copy = Tenant.objects.get(slug="copy")
    again = list(json.loads(json.dumps(r)) for r in memory_export_records(tenant=copy))
    assert canonical_export(again) == canonical_export(original)

    # Undo works on the imported lineage exactly as on the original.
    imported_merge = MemoryChange.objects.get(tenant=copy, operation="merge")
    memory_change_undo(tenant=copy, change_id=imported_merge.pk)
    texts = set(Memory.objects.filter(tenant=copy, status="active").values_list("text", flat=True))
    assert {"likes green tea", "User likes green tea"} <= texts
    assert DuplicateCluster.objects.get(tenant=copy).changes.count() == 1


@pytest.mark.django_db
def test_import_refuses_a_file_that_is_not_an_export(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type": "memory", "id": 1}\n')
    TenantFactory(slug="target")
    with pytest.raises(CommandError, match="not an agent-memory-export"):
        run("import_memories", str(path), "--tenant", "target", "--apply")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("record_type", "field", "value", "message"),
    [
        ("change", "created_at", None, r"change \d+: created_at is missing"),
        ("kept_apart", "created_at", None, r"kept_apart \d+: created_at is missing"),
        ("memory", "event_date", "last Tuesday", r"memory \d+: event_date 'last Tuesday' is not an ISO date"),
        ("memory", "updated_at", "2026-13-01T00:00:00+00:00", r"memory \d+: updated_at .* is not an ISO"),
    ],
)
def test_import_names_a_missing_or_malformed_timestamp_and_stores_nothing(
    tmp_path: Path, record_type: str, field: str, value: object, message: str
) -> None:
    tenant = _lineage_tenant()
    path = tmp_path / "export.jsonl"
    run("export_memories", "--tenant", tenant.slug, "-o", str(path))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    broken = next(r for r in records if r["type"] == record_type)
    broken[field] = value
    path.write_text("".join(json.dumps(r) + "\n" for r in records))

    with pytest.raises(CommandError, match=message):
        run("import_memories", str(path), "--tenant", "copy", "--create-tenant", "--apply")
    assert not Memory.objects.filter(tenant__slug="copy").exists()
