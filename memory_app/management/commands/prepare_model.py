from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand

from memory_app.conf import embeddings_config


class Command(BaseCommand):
    help = (
        "Export the local embedding model to ONNX once for this checkout (EMBEDDING_ONNX_DIR), and "
        "its int8 copy for search queries (EMBEDDING_QUERY_INT8); bin/setup runs it, so no server "
        "process makes them inside its first request. Quick when the files already exist."
    )
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        config = embeddings_config()
        if config.provider != "local" or config.local_runtime != "onnx":
            self.stdout.write("nothing to prepare: the local model does not run on ONNX Runtime here")
            return
        # start-up cost: torch and the model load only for this command
        from memory_app.embeddings.forward import export_path, int8_path, onnx_export, onnx_int8
        from memory_app.embeddings.local import local_model

        model = local_model()
        self._prepare(export_path(model), lambda: onnx_export(model), "ONNX model")
        if config.query_int8:
            self._prepare(int8_path(model), lambda: onnx_int8(model), "int8 query model")

    def _prepare(self, path: Path, make: Callable[[], Path], name: str) -> None:
        if path.exists():
            self.stdout.write(f"{name} ready: {path}")
            return
        started = time.monotonic()
        make()
        self.stdout.write(f"{name} made in {time.monotonic() - started:.0f} s: {path}")
