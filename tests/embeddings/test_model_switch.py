"""Any sentence-transformers model, offline: a second, tiny model that the test builds and saves,
`reindex` really re-embedding with it, searches during the build on the live model, and the switch
followed by the running process (no restart), from a store before it to a search after it."""

from __future__ import annotations

import logging
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.test import override_settings

from memory_app.embeddings import active, embed_texts, embedding_model_name
from memory_app.errors import ApplicationError
from memory_app.judge.calibration.params import clear_calibration_cache, load_calibration
from memory_app.models import ActiveEmbeddingModel, Memory, ReindexVector
from tests.factories.tiny_model import tiny_model

pytestmark = pytest.mark.django_db
MINILM = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tiny_model(tmp_path_factory.mktemp("models")))


def reindex(model: str, *args: str) -> str:
    out = StringIO()
    with override_settings(EMBEDDING_MODEL=model):  # the command's own environment
        call_command("reindex", "--apply", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def vector_hits(client, query: str) -> list[str]:  # type: ignore[no-untyped-def]
    body = {"query": query, "mode": "vector", "limit": 5, "filters": {"user_id": "u1"}}
    response = client.post("/api/v1/memories/search", body, format="json")
    assert response.status_code == 200, response.content
    return [hit["memory"]["text"] for hit in response.json()["results"]]


def test_a_store_before_the_switch_is_found_by_a_search_after_it_without_a_restart(
    tenant_a, tenant_b, tiny, monkeypatch
):
    # another process's view: it re-reads the registry at every lookup, never told of the switch
    monkeypatch.setattr(active, "ACTIVE_MODEL_CACHE_SECONDS", 0.0)
    for client in (tenant_a.client, tenant_b.client):
        stored = client.post(
            "/api/v1/memories", {"text": "User likes green tea", "user_id": "u1"}, format="json"
        )
        assert stored.status_code == 201
    before = Memory.objects.get(tenant=tenant_a.tenant)
    assert before.embedding_model == MINILM

    # the build: new vectors beside the live ones; searches and stores keep MiniLM meanwhile, even in
    # a process whose EMBEDDING_MODEL already names the new model
    assert "embedded 1" in reindex(tiny, "--no-switch", "--tenant", tenant_a.tenant.slug)
    assert ReindexVector.objects.get(memory=before).model == tiny
    with override_settings(EMBEDDING_MODEL=tiny):
        assert embedding_model_name(tenant_a.tenant) == MINILM
        assert vector_hits(tenant_a.client, "green tea") == ["User likes green tea"]
    assert Memory.objects.get(pk=before.pk).embedding_model == MINILM

    # the switch: one transaction; this process follows at its next lookup
    assert "switched 1" in reindex(tiny, "--tenant", tenant_a.tenant.slug)
    assert embedding_model_name(tenant_a.tenant) == tiny
    after = Memory.objects.get(pk=before.pk)
    assert after.embedding_model == tiny
    expected = embed_texts(["User likes green tea"], tenant=None, model=tiny)[0]
    minilm = embed_texts(["User likes green tea"], tenant=None, model=MINILM)[0]
    stored_vector = np.asarray(after.embedding, dtype=np.float32)
    assert np.allclose(stored_vector, expected, atol=1e-5)  # really re-embedded,
    assert float(stored_vector @ minilm) < 0.9  # not MiniLM's vector relabelled

    assert vector_hits(tenant_a.client, "green tea") == ["User likes green tea"]
    later = tenant_a.client.post(
        "/api/v1/memories", {"text": "User lives in Paris", "user_id": "u1"}, format="json"
    )
    assert Memory.objects.get(pk=later.json()["memory_id"]).embedding_model == tiny
    assert "User lives in Paris" in vector_hits(tenant_a.client, "where does the user live")

    # the other tenant was not switched: its rows, queries and stores stay on MiniLM
    assert embedding_model_name(tenant_b.tenant) == MINILM
    assert vector_hits(tenant_b.client, "green tea") == ["User likes green tea"]
    assert ActiveEmbeddingModel.objects.get(tenant=tenant_a.tenant).model == tiny


def test_an_uncalibrated_model_falls_back_to_conservative_thresholds_with_a_hint(tiny, caplog):
    clear_calibration_cache()
    with caplog.at_level(logging.WARNING):
        calibration = load_calibration(tiny)
    assert calibration.review_below > 1  # nothing merges on its own
    assert "calibrate_dedup" in caplog.text
    assert load_calibration(MINILM).review_below <= 1
    clear_calibration_cache()


def test_a_model_that_is_neither_a_folder_nor_a_package_is_a_clear_error(tmp_path):
    with pytest.raises(ApplicationError, match="neither a directory nor an installed package"):
        embed_texts(["x"], tenant=None, model=str(tmp_path / "missing"))
