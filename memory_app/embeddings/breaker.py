"""A circuit breaker in front of the embedding provider.

When the provider is down, every request that needs an embedding would otherwise wait through the
provider's timeout and retries (seconds each) before degrading. After EMBEDDING_BREAKER_FAILURES
failed calls in a row the breaker opens: for EMBEDDING_BREAKER_SECONDS calls fail at once with
the same ApplicationError, so searches answer from full text and stores answer
`embedding_pending` without waiting. Then one call is let through (half open): its success closes
the breaker, its failure opens it again. Per process; `state()` feeds the health report.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from memory_app.conf import embeddings_config
from memory_app.embeddings.providers import EmbeddingProvider
from memory_app.errors import ApplicationError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BreakerState:
    state: str  # "closed" | "open" | "half_open"
    consecutive_failures: int
    last_error: str
    retry_in_seconds: float


class _Breaker:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.failures = 0
        self.opened_at: float | None = None
        self.trial_running = False
        self.last_error = ""

    def before(self) -> None:
        with self.lock:
            if self.opened_at is None:
                return
            waited = time.monotonic() - self.opened_at
            if waited >= embeddings_config().breaker_seconds and not self.trial_running:
                self.trial_running = True  # this caller is the half-open trial
                return
            retry_in = max(embeddings_config().breaker_seconds - waited, 0.0)
        raise ApplicationError(
            f"embedding provider unavailable (circuit open after repeated failures: {self.last_error}); "
            f"next attempt in {retry_in:.0f}s",
            code="embedding_provider_unavailable",
            status=503,
        )

    def succeeded(self) -> None:
        with self.lock:
            if self.opened_at is not None:
                logger.info("embedding provider answers again; circuit closed")
            self.failures, self.opened_at, self.trial_running = 0, None, False

    def failed(self, exc: Exception) -> None:
        with self.lock:
            self.failures += 1
            self.last_error = str(getattr(exc, "message", exc))[:200]
            self.trial_running = False
            if self.failures >= embeddings_config().breaker_failures:
                if self.opened_at is None:
                    logger.warning(
                        "embedding provider failed %d time(s) in a row; not calling it for %.0fs (%s)",
                        self.failures,
                        embeddings_config().breaker_seconds,
                        self.last_error,
                    )
                self.opened_at = time.monotonic()

    def state(self) -> BreakerState:
        with self.lock:
            if self.opened_at is None:
                return BreakerState("closed", self.failures, self.last_error, 0.0)
            waited = time.monotonic() - self.opened_at
            retry_in = max(embeddings_config().breaker_seconds - waited, 0.0)
            return BreakerState("open" if retry_in else "half_open", self.failures, self.last_error, retry_in)

    def reset(self) -> None:
        self.succeeded()
        with self.lock:
            self.last_error = ""


breaker = _Breaker()


def provider_embed(provider: EmbeddingProvider, texts: list[str]) -> np.ndarray:
    """`provider.embed(texts)` behind the breaker; only a remote provider is guarded."""
    if not provider.is_remote:
        return provider.embed(texts)
    breaker.before()
    try:
        vectors = provider.embed(texts)
    except Exception as exc:
        breaker.failed(exc)
        raise
    breaker.succeeded()
    return vectors


def provider_embed_begin(
    provider: EmbeddingProvider, texts: list[str], *, query: bool = False
) -> Callable[[], np.ndarray]:
    """Start embedding `texts`; the returned function waits for the rows. The local model runs on
    its batcher's thread meanwhile (`embed_begin`; `query` as there), so the caller can do
    other work; a remote provider, behind the breaker, is called now as `provider_embed` does."""
    begin = getattr(provider, "embed_begin", None)
    if provider.is_remote or begin is None:
        vectors = provider_embed(provider, texts)
        return lambda: vectors
    wait: Callable[[], np.ndarray] = begin(texts, query=query)
    return wait
