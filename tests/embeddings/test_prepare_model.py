"""`manage.py prepare_model` (run by bin/setup): the ONNX file is exported once per checkout, so no
server exports it inside a request."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from memory_app.embeddings import forward


def prepare() -> str:
    out = StringIO()
    call_command("prepare_model", stdout=out)
    return out.getvalue()


def test_prepare_model_exports_once_then_reports_the_file_ready(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    settings.EMBEDDING_ONNX_DIR = str(tmp_path)
    settings.EMBEDDING_LOCAL_RUNTIME = "onnx"
    exported: list[Path] = []

    def fake_export(model: Any, path: Path) -> None:  # the real one takes ~30 s of CPU
        exported.append(path)
        path.write_bytes(b"onnx")

    monkeypatch.setattr(forward, "_export", fake_export)
    assert "exported" in prepare()
    assert "ready" in prepare()
    assert len(exported) == 1 and exported[0].parent == tmp_path


def test_prepare_model_does_nothing_when_the_model_runs_on_torch(settings: Any, tmp_path: Path):
    settings.EMBEDDING_ONNX_DIR = str(tmp_path)
    settings.EMBEDDING_LOCAL_RUNTIME = "torch"
    assert "nothing to prepare" in prepare()
    assert list(tmp_path.iterdir()) == []
