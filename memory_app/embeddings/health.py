"""The embedding provider's health as this process has seen it: what readiness reports.

The embedding layer calls `record_success()` / `record_failure(reason)` around every provider call
(providers.get_provider wraps the provider so that every call is recorded; a circuit breaker can
read and write the same record). `provider_state()` is what `/api/v1/health/ready` shows. The record
is per process: each gunicorn worker reports the calls it made.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory_app.conf import embeddings_config
from memory_app.embeddings.active import vector_dimensions_seen
from memory_app.embeddings.forward import local_runtime, query_runtime

# After this many failures in a row the provider counts as down rather than failing now and then.
DOWN_AFTER_FAILURES = 3


@dataclass
class _Record:
    consecutive_failures: int = 0
    failures: int = 0
    successes: int = 0
    last_failure_at: float | None = None
    last_failure_reason: str = ""
    last_success_at: float | None = None


_lock = threading.Lock()
_record = _Record()


def record_success() -> None:
    with _lock:
        _record.consecutive_failures = 0
        _record.successes += 1
        _record.last_success_at = time.time()


def record_failure(reason: str) -> None:
    with _lock:
        _record.consecutive_failures += 1
        _record.failures += 1
        _record.last_failure_at = time.time()
        _record.last_failure_reason = reason[:300]


def reset() -> None:
    """Forget everything (a new provider configuration, or a test)."""
    global _record
    with _lock:
        _record = _Record()


def _iso(stamp: float | None) -> str | None:
    return None if stamp is None else datetime.fromtimestamp(stamp, tz=UTC).isoformat()


def provider_state() -> dict[str, Any]:
    """`status`: ok (last call worked), failing (the last one failed), down (DOWN_AFTER_FAILURES in
    a row failed) or unknown (no call yet in this process)."""
    with _lock:
        record = _Record(**vars(_record))
    if record.consecutive_failures >= DOWN_AFTER_FAILURES:
        status = "down"
    elif record.consecutive_failures:
        status = "failing"
    else:
        status = "ok" if record.successes else "unknown"
    return {
        "status": status,
        "provider": embeddings_config().provider,
        "model": embeddings_config().model,
        # The vector columns' width as this process last read it (no query here: readiness must
        # answer with the database down); null before the first embedding.
        "dimensions": vector_dimensions_seen(),
        # What runs the local model's pass (embeddings/forward.py): "onnx", or "torch" when asked
        # for or when ONNX Runtime could not start.
        "runtime": local_runtime() if embeddings_config().provider == "local" else None,
        # What runs a search query's pass: "onnx-int8" (EMBEDDING_QUERY_INT8), else as above.
        "query_runtime": query_runtime() if embeddings_config().provider == "local" else None,
        "consecutive_failures": record.consecutive_failures,
        "failures": record.failures,
        "successes": record.successes,
        "last_failure_at": _iso(record.last_failure_at),
        "last_failure_reason": record.last_failure_reason,
        "last_success_at": _iso(record.last_success_at),
    }
