"""`manage.py prepare_model` (run by bin/setup): the ONNX file and its int8 copy for queries are made
once per checkout, so no server makes them inside a request."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from memory_app.embeddings import forward
from memory_app.embeddings.local import local_model


def prepare() -> str:
    out = StringIO()
    call_command("prepare_model", stdout=out)
    return out.getvalue()


def test_prepare_model_makes_both_files_once_then_reports_them_ready(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    settings.EMBEDDING_ONNX_DIR = str(tmp_path)
    settings.EMBEDDING_LOCAL_RUNTIME = "onnx"
    settings.EMBEDDING_QUERY_INT8 = True
    made: list[Path] = []

    def fake_export(model: Any, path: Path) -> None:  # the real one takes ~30 s of CPU
        made.append(path)
        path.write_bytes(b"onnx")

    def fake_quantize(source: Path, path: Path) -> None:
        assert source.read_bytes() == b"onnx"
        made.append(path)
        path.write_bytes(b"int8")

    monkeypatch.setattr(forward, "_export", fake_export)
    monkeypatch.setattr(forward, "_quantize", fake_quantize)
    first = prepare()
    assert "ONNX model made" in first and "int8 query model made" in first
    second = prepare()
    assert "ONNX model ready" in second and "int8 query model ready" in second
    model = local_model()
    assert made == [forward.export_path(model), forward.int8_path(model)]
    assert all(p.parent == tmp_path for p in made)


def test_prepare_model_makes_no_int8_copy_with_the_setting_off(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    settings.EMBEDDING_ONNX_DIR = str(tmp_path)
    settings.EMBEDDING_LOCAL_RUNTIME = "onnx"
    settings.EMBEDDING_QUERY_INT8 = False
    monkeypatch.setattr(forward, "_export", lambda model, path: path.write_bytes(b"onnx"))
    assert "int8" not in prepare()
    assert list(tmp_path.glob("*.onnx")) == [forward.export_path(local_model())]


def test_prepare_model_does_nothing_when_the_model_runs_on_torch(settings: Any, tmp_path: Path):
    settings.EMBEDDING_ONNX_DIR = str(tmp_path)
    settings.EMBEDDING_LOCAL_RUNTIME = "torch"
    assert "nothing to prepare" in prepare()
    assert list(tmp_path.iterdir()) == []
