"""gunicorn settings for the API: `gunicorn -c project/gunicorn.conf.py project.wsgi:application`.

The REST API and the admin (WSGI). The MCP server's streamable HTTP transport is an ASGI app and
runs in its own uvicorn process beside this one (bin/serve-mcp, port 8001): docs/OPERATIONS.md.

Threaded workers (gthread): a request spends much of its time waiting on PostgreSQL, so a few
threads per process keep the CPU busy, and the threads of one process share one copy of the
embedding model and its micro-batcher (concurrent requests are embedded in one forward pass).
Processes give parallelism past the GIL: about one per core. docs/OPERATIONS.md has the measured
recommendation (bench/load.py); every value can be overridden by the environment variables below
or on the command line.
"""

from __future__ import annotations

import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# gthread, answering requests gunicorn itself refuses (malformed, oversized headers) with the
# service's JSON error body instead of gunicorn's HTML page.
worker_class = "project.server_errors.JsonErrorWorker"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("WEB_THREADS", "4"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 30
keepalive = 5
# Recycle workers now and then (with jitter, so not all at once) to bound memory growth. Rarely: a
# new worker costs ~5 s of CPU (Django, torch, the model's warm-up; ~550 MB resident), which at
# 5,000 requests per life was ~1 ms of CPU per request, and it starts with cold caches.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "50000"))
max_requests_jitter = max_requests // 10
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-") or None
# One torch thread per worker process unless told otherwise: workers x threads would oversubscribe.
os.environ.setdefault("EMBEDDING_TORCH_THREADS", "1")
