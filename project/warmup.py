"""Load the local embedding model before a server process takes requests, so its first request
does not pay the ~2 s load. Called by gunicorn's `post_worker_init` and by project/asgi.py;
EMBEDDING_WARMUP=false skips it."""

from __future__ import annotations

import os


def embedding_warmup() -> None:
    if os.environ.get("EMBEDDING_WARMUP", "true").lower() in ("0", "false", "no", "off"):
        return
    from django.conf import settings

    if settings.EMBEDDING_PROVIDER == "local":
        from memory_app.embeddings.local import local_embed

        local_embed(["warm-up"])
