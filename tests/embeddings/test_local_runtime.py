"""The local model's pass on ONNX Runtime and on torch (embeddings/forward.py): the same vectors,
the same token vectors for the judge, one export reused, and torch when ONNX cannot start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory_app.embeddings import forward
from memory_app.embeddings.health import provider_state
from memory_app.embeddings.local import local_embed, local_model
from memory_app.judge.signals.alignment import TokenEncoder

TEXTS = [
    "Caroline went to the LGBTQ support group yesterday and found it powerful.",
    "My daughter Mia just turned 7 last week!",
    "balance -200 EUR",
    "  leading and trailing spaces are stripped  ",
    "Melanie",
    # Longer than the model's 256 word pieces: truncated the same way by both runtimes.
    " ".join(f"Caroline planted tomato number {i} in the community garden on Saturday." for i in range(40)),
]


@pytest.fixture
def runtime(settings, tmp_path: Path) -> Iterator[object]:  # type: ignore[no-untyped-def]
    """Each test picks its runtime; the process's choice is restored afterwards."""
    settings.EMBEDDING_ONNX_DIR = str(tmp_path / "models")
    forward.reset()
    yield settings
    forward.reset()


def _embed(settings, name: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    settings.EMBEDDING_LOCAL_RUNTIME = name
    forward.reset()
    vectors = local_embed(TEXTS)
    assert forward.local_runtime() == name
    return vectors


def test_onnx_and_torch_give_the_same_sentence_vectors(runtime) -> None:  # type: ignore[no-untyped-def]
    onnx, torch = _embed(runtime, "onnx"), _embed(runtime, "torch")
    assert np.abs(onnx - torch).max() < 1e-5
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-6)


def test_local_embed_matches_the_sentence_transformers_pipeline(runtime) -> None:  # type: ignore[no-untyped-def]
    reference = local_model().encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    for name in ("onnx", "torch"):
        assert np.abs(_embed(runtime, name) - reference).max() < 1e-5


def test_the_token_encoder_gets_the_same_word_vectors_from_either_runtime(runtime) -> None:  # type: ignore[no-untyped-def]
    words = {}
    for name in ("onnx", "torch"):
        runtime.EMBEDDING_LOCAL_RUNTIME = name
        forward.reset()
        words[name] = TokenEncoder().tokens(TEXTS[:2])
    for onnx, torch in zip(words["onnx"], words["torch"], strict=True):
        assert onnx.stems == torch.stems
        assert np.abs(onnx.vectors.astype(np.float32) - torch.vectors.astype(np.float32)).max() < 2e-3


def test_the_export_is_written_once_and_reused(runtime) -> None:  # type: ignore[no-untyped-def]
    _embed(runtime, "onnx")
    path = forward.export_path(local_model())
    written = path.stat().st_mtime_ns
    forward.reset()
    _embed(runtime, "onnx")
    assert path.stat().st_mtime_ns == written
    assert [p.name for p in path.parent.glob("*.onnx*")] == [path.name]


def test_a_runtime_that_cannot_start_falls_back_to_torch_and_health_says_so(runtime, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    runtime.EMBEDDING_ONNX_DIR = str(blocker / "models")
    runtime.EMBEDDING_LOCAL_RUNTIME = "onnx"
    forward.reset()
    vectors = local_embed(TEXTS)
    assert forward.local_runtime() == "torch"
    assert provider_state()["runtime"] == "torch"
    runtime.EMBEDDING_LOCAL_RUNTIME = "torch"
    forward.reset()
    assert np.abs(vectors - local_embed(TEXTS)).max() == 0.0
