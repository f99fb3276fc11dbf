from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from memory_app.conf import embeddings_config


class Command(BaseCommand):
    help = (
        "Export the local embedding model to ONNX once for this checkout (EMBEDDING_ONNX_DIR); "
        "bin/setup runs it, so no server process exports it inside its first request. Quick when "
        "the file already exists."
    )
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        config = embeddings_config()
        if config.provider != "local" or config.local_runtime != "onnx":
            self.stdout.write("nothing to prepare: the local model does not run on ONNX Runtime here")
            return
        # start-up cost: torch and the model load only for this command
        from memory_app.embeddings.forward import export_path, onnx_export
        from memory_app.embeddings.local import local_model

        model = local_model()
        path = export_path(model)
        if path.exists():
            self.stdout.write(f"ONNX model ready: {path}")
            return
        started = time.monotonic()
        onnx_export(model)
        self.stdout.write(f"ONNX model exported in {time.monotonic() - started:.0f} s: {path}")
