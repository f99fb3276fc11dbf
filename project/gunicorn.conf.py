"""gunicorn settings for the API: `gunicorn -c project/gunicorn.conf.py project.wsgi:application`.

Threaded workers (gthread): a request spends much of its time waiting on PostgreSQL, so a few
threads per process keep the CPU busy, and the threads of one process share one copy of the
embedding model and its micro-batcher (concurrent requests are embedded in one forward pass).
Processes give parallelism past the GIL: about one per core. docs/OPERATIONS.md has the measured
recommendation (bench/load.py); every value can be overridden by the environment variables below
or on the command line.
"""

from __future__ import annotations

import os
from typing import Any

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("WEB_THREADS", "4"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 30
keepalive = 5
# Recycle workers now and then (with jitter, so not all at once) to bound memory growth.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "5000"))
max_requests_jitter = max_requests // 10
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-") or None
# One torch thread per worker process unless told otherwise: workers x threads would oversubscribe.
os.environ.setdefault("EMBEDDING_TORCH_THREADS", "1")


def post_worker_init(worker: Any) -> None:
    """Load the local embedding model before the worker takes requests, so the first request does
    not pay the ~2 s load (EMBEDDING_WARMUP=false skips it)."""
    if os.environ.get("EMBEDDING_WARMUP", "true").lower() in ("0", "false", "no", "off"):
        return
    from django.conf import settings

    if settings.EMBEDDING_PROVIDER == "local":
        from memory_app.embeddings.local import local_embed

        local_embed(["warm-up"])
