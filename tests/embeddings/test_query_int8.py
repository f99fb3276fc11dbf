"""A search's query through the int8 copy of the local model (embeddings/forward.py): close to the
full model's vector, never used for a stored text, made once beside the export, and the full model
when the setting is off or the copy cannot be made."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory_app.embeddings import forward
from memory_app.embeddings.health import provider_state
from memory_app.embeddings.local import local_embed, local_model
from tests.embeddings.test_local_runtime import TEXTS  # short and long texts, one past 256 word pieces


@pytest.fixture
def onnx(settings, tmp_path: Path) -> Iterator[object]:  # type: ignore[no-untyped-def]
    """ONNX Runtime with the int8 query copy in a folder of the test's own."""
    settings.EMBEDDING_ONNX_DIR, settings.EMBEDDING_LOCAL_RUNTIME = str(tmp_path / "models"), "onnx"
    settings.EMBEDDING_QUERY_INT8 = True
    forward.reset()
    yield settings
    forward.reset()


def test_a_query_vector_from_the_int8_copy_stays_close_to_the_full_models(onnx) -> None:  # type: ignore[no-untyped-def]
    full, quantized = local_embed(TEXTS), local_embed(TEXTS, query=True)
    assert forward.query_runtime() == "onnx-int8"
    cosines = np.sum(full * quantized, axis=1)
    assert cosines.min() > 0.97
    assert np.abs(full - quantized).max() > 1e-4  # another model indeed, not the full one again
    assert np.allclose(np.linalg.norm(quantized, axis=1), 1.0, atol=1e-5)


def test_a_stored_text_always_gets_the_full_models_vector(onnx) -> None:  # type: ignore[no-untyped-def]
    before = local_embed(TEXTS)
    local_embed(TEXTS, query=True)  # the int8 session is open now
    assert np.abs(local_embed(TEXTS) - before).max() == 0.0
    reference = local_model().encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    assert np.abs(before - reference).max() < 1e-5


def test_with_the_setting_off_a_query_gets_the_full_models_vector(onnx) -> None:  # type: ignore[no-untyped-def]
    onnx.EMBEDDING_QUERY_INT8 = False
    forward.reset()
    assert np.abs(local_embed(TEXTS, query=True) - local_embed(TEXTS)).max() == 0.0
    assert forward.query_runtime() == "onnx"
    assert not forward.int8_path(local_model()).exists()


def test_the_int8_copy_is_made_once_beside_the_export_and_health_names_it(onnx) -> None:  # type: ignore[no-untyped-def]
    local_embed(TEXTS[:1], query=True)
    path = forward.int8_path(local_model())
    written = path.stat().st_mtime_ns
    forward.reset()
    local_embed(TEXTS[:1], query=True)
    assert path.stat().st_mtime_ns == written
    assert sorted(p.name for p in path.parent.glob("*.onnx*")) == sorted(
        [forward.export_path(local_model()).name, path.name]
    )
    assert provider_state()["query_runtime"] == "onnx-int8"


def test_a_copy_that_cannot_be_made_leaves_queries_on_the_full_model(onnx, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(model: object) -> Path:
        raise RuntimeError("quantization failed")

    monkeypatch.setattr(forward, "onnx_int8", broken)
    assert np.abs(local_embed(TEXTS, query=True) - local_embed(TEXTS)).max() == 0.0
    assert forward.query_runtime() == "onnx"
