"""A local model of another width: `reindex --apply --resize` makes every column holding the model's
vectors that width, rebuilds their indexes, makes the model live and re-embeds, and the service then
reads the width from the database (stores, searches, client-supplied vectors). The packaged MiniLM's
own vectors (the cache's proxy, the judge's token vectors) keep 384. Without --resize, --apply
refuses and changes nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from memory_app.db import column_indexes, vector_column_dimensions
from memory_app.embeddings import active, embed_texts, vector_dimensions
from memory_app.errors import ApplicationError
from memory_app.models import ActiveEmbeddingModel, EmbeddingCacheEntry, Memory, Procedure
from memory_app.services.maintenance.reindex import MODEL_VECTOR_COLUMNS, vector_columns_resize
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.validation import store_items_validate
from tests.factories.tiny_model import tiny_model

pytestmark = pytest.mark.django_db
MINILM = "all-MiniLM-L6-v2"
WIDTH = 48


@pytest.fixture(scope="module")
def tiny48(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tiny_model(tmp_path_factory.mktemp("models"), dimensions=WIDTH))


@pytest.fixture
def columns_restored(db) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """Other tests share the database: the columns go back to 384 with the packaged model, by the
    same resize (the test's transaction would roll the change back too; this holds without it)."""
    yield
    if vector_column_dimensions(Memory._meta.db_table, "embedding") != 384:
        vector_columns_resize(dimensions=384, model=MINILM)
    active.active_model_forget()


def reindex(model: str, *args: str) -> str:
    out = StringIO()
    with override_settings(EMBEDDING_MODEL=model):  # the command's own environment
        call_command("reindex", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def widths() -> dict[str, int | None]:
    return {
        f"{owner._meta.db_table}.{column}": vector_column_dimensions(owner._meta.db_table, column)
        for owner, column in MODEL_VECTOR_COLUMNS
    }


def indexes() -> dict[str, list[str]]:
    return {
        f"{owner._meta.db_table}.{column}": [name for name, _ in column_indexes(owner._meta.db_table, column)]
        for owner, column in MODEL_VECTOR_COLUMNS
    }


def store(client, text: str) -> int:  # type: ignore[no-untyped-def]
    response = client.post("/api/v1/memories", {"text": text, "user_id": "u1"}, format="json")
    assert response.status_code == 201, response.content
    return int(response.json()["memory_id"])


def vector_hits(client, query: str) -> list[str]:  # type: ignore[no-untyped-def]
    body = {"query": query, "mode": "vector", "limit": 5, "filters": {"user_id": "u1"}}
    response = client.post("/api/v1/memories/search", body, format="json")
    assert response.status_code == 200, response.content
    return [hit["memory"]["text"] for hit in response.json()["results"]]


def test_apply_without_resize_refuses_a_model_of_another_width_and_changes_nothing(
    tenant_a, tiny48, columns_restored
):
    pk = store(tenant_a.client, "User likes green tea")
    before = Memory.objects.get(pk=pk)
    cached = list(EmbeddingCacheEntry.objects.filter(tenant=tenant_a.tenant).values_list("pk", "embedding"))

    plan = reindex(tiny48)
    assert f"resized from 384 to {WIDTH}" in plan and "full text only" in plan
    assert "--apply --resize" in plan
    with pytest.raises(CommandError, match=r"--apply --resize.*A model of another size"):
        reindex(tiny48, "--apply")
    with pytest.raises(CommandError, match="without --tenant"):
        reindex(tiny48, "--apply", "--resize", "--tenant", tenant_a.tenant.slug)

    assert set(widths().values()) == {384}
    after = Memory.objects.get(pk=pk)
    assert after.embedding_model == MINILM
    assert np.array_equal(np.asarray(after.embedding), np.asarray(before.embedding))
    assert not ActiveEmbeddingModel.objects.exists()
    after_cache = EmbeddingCacheEntry.objects.filter(tenant=tenant_a.tenant).values_list("pk", "embedding")
    assert [(pk, list(v)) for pk, v in after_cache] == [(pk, list(v)) for pk, v in cached]


def test_reindex_with_resize_makes_the_columns_the_models_width_and_search_finds_the_memories(
    tenant_a, tiny48, columns_restored
):
    texts = ["User likes green tea", "User plays the violin", "User lives in Paris"]
    for text in texts:
        store(tenant_a.client, text)
    Procedure.objects.create(
        tenant=tenant_a.tenant,
        pattern="what does the user drink",
        pattern_hash="p1",
        pattern_embedding=np.ones(384, dtype=np.float32) / np.sqrt(384),
        embedding_model=MINILM,
    )
    indexes_before = indexes()
    assert "memory_embedding_hnsw" in indexes_before["memory_app_memory.embedding"]

    out = reindex(tiny48, "--apply", "--resize")
    assert f"resized the vector columns from 384 to {WIDTH}" in out
    assert "switched 3 memories" in out and "re-embedded 1 procedure patterns" in out

    assert set(widths().values()) == {WIDTH}
    assert indexes() == indexes_before  # every index on those columns built again
    # the packaged MiniLM's proxy vectors and the 512-d surface sketch keep their widths
    cache = EmbeddingCacheEntry._meta.db_table
    assert vector_column_dimensions(cache, "proxy_embedding") == 384
    assert vector_column_dimensions(cache, "surface_sketch") == 512
    assert ActiveEmbeddingModel.objects.get(tenant=None).model == tiny48
    assert vector_dimensions() == WIDTH

    memories = list(Memory.objects.filter(tenant=tenant_a.tenant))
    assert {m.embedding_model for m in memories} == {tiny48}
    assert {len(m.embedding) for m in memories} == {WIDTH}
    procedure = Procedure.objects.get(tenant=tenant_a.tenant)
    assert procedure.embedding_model == tiny48 and len(procedure.pattern_embedding) == WIDTH

    # the running process follows: queries and new stores use the new model and width
    assert vector_hits(tenant_a.client, "User likes green tea")[0] == "User likes green tea"
    later = Memory.objects.get(pk=store(tenant_a.client, "User walks the dog daily"))
    assert later.embedding_model == tiny48 and len(later.embedding) == WIDTH
    assert "User walks the dog daily" in vector_hits(tenant_a.client, "User walks the dog daily")

    # a precomputed vector (import, benchmarks) must have the columns' width now
    wrong = MemoryInput(text="User has a cat", user_id="u1", embedding=np.full(384, 0.1, dtype=np.float32))
    with pytest.raises(ApplicationError) as refused:
        store_items_validate([wrong])
    assert refused.value.fields == {"items[0].embedding": [f"Must be {WIDTH} finite numbers."]}

    # rerunning finds nothing left to resize or embed
    again = reindex(tiny48)
    assert "resized" not in again and "0 to embed" in again


def test_the_packaged_model_is_refused_while_the_columns_have_another_width(
    tenant_a, tiny48, columns_restored
):
    reindex(tiny48, "--apply", "--resize")
    assert f"resized from {WIDTH} to 384" in reindex(MINILM)
    with pytest.raises(ApplicationError, match="--resize"):
        embed_texts(["User likes tea"], tenant=tenant_a.tenant, model=MINILM)


def test_an_export_of_the_old_width_is_refused_by_an_import_after_the_resize(
    tenant_a, tenant_b, tiny48, columns_restored
):
    store(tenant_a.client, "User likes green tea")
    exported = tenant_a.client.get("/api/v1/export")
    body = b"".join(exported.streaming_content)
    reindex(tiny48, "--apply", "--resize")

    response = tenant_b.client.generic(
        "POST", "/api/v1/import?apply=true", body, content_type=exported["Content-Type"]
    )
    assert response.status_code == 400, response.content
    assert "database refused a record" in response.json()["error"]["message"]
    assert "48" in response.json()["error"]["message"]
    assert not Memory.objects.filter(tenant=tenant_b.tenant).exists()


def test_a_process_that_has_not_seen_the_resize_answers_503_once_then_follows(
    tenant_a, tiny48, columns_restored
):
    store(tenant_a.client, "User likes green tea")
    reindex(tiny48, "--apply", "--resize")
    # another process's cached view from before the resize: the old model and width
    active._cache = ({}, 384, time.monotonic() + 60)

    body = {"text": "User plays the violin", "user_id": "u1"}
    refused = tenant_a.client.post("/api/v1/memories", body, format="json")
    assert refused.status_code == 503 and refused["Retry-After"] == "1", refused.content
    assert not Memory.objects.filter(text="User plays the violin").exists()
    retried = tenant_a.client.post("/api/v1/memories", body, format="json")
    assert retried.status_code == 201, retried.content
    assert Memory.objects.get(pk=retried.json()["memory_id"]).embedding_model == tiny48

    # a stale search compares with rows of its (old) model only: none left, so no error either
    active._cache = ({}, 384, time.monotonic() + 60)
    search = {"query": "violin", "mode": "vector", "limit": 5, "filters": {"user_id": "u1"}}
    assert tenant_a.client.post("/api/v1/memories/search", search, format="json").status_code == 200
    active.active_model_forget()
    assert vector_hits(tenant_a.client, "User plays the violin")[0] == "User plays the violin"


def test_a_run_stopped_after_the_resize_is_resumed_by_running_it_again(tenant_a, tiny48, columns_restored):
    for text in ("User likes green tea", "User plays the violin"):
        store(tenant_a.client, text)
    first = reindex(tiny48, "--apply", "--resize", "--no-switch")
    assert "resized the vector columns" in first and "embedded 2 memories" in first
    assert set(widths().values()) == {WIDTH}
    assert set(Memory.objects.values_list("embedding_model", flat=True)) == {MINILM}  # not switched

    second = reindex(tiny48, "--apply")  # no --resize needed any more: the columns fit
    assert "resized" not in second and "embedded 0 memories" in second and "switched 2 memories" in second
    assert vector_hits(tenant_a.client, "User plays the violin")[0] == "User plays the violin"
