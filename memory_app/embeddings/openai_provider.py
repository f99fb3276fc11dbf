"""The OpenAI(-compatible) provider: batched `POST /embeddings` with our own retries.

The SDK's own retries are off (`max_retries=0`) so there is one retry policy, ours, which the
tests exercise through respx: 429, 5xx, timeouts and connection errors are retried with
exponential backoff (honouring `Retry-After`); any other 4xx fails at once. After the last attempt
an `ApplicationError` says what happened.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator

import numpy as np
import openai

from memory_app.embeddings.tokens import count_tokens, encoding_for
from memory_app.errors import ApplicationError

logger = logging.getLogger(__name__)

# OpenAI's limits for /embeddings: inputs per request and tokens per input.
MAX_INPUTS_PER_REQUEST = 2048
MAX_TOKENS_PER_INPUT = 8191
RETRY_AFTER_CAP_SECONDS = 30.0


def backoff_delay(attempt: int, *, base: float, retry_after: float | None = None) -> float:
    """Seconds to wait before retry `attempt` (0-based): base * 2^attempt with +-25 % jitter,
    never less than the server's Retry-After (capped, so one request cannot stall a worker)."""
    delay = base * (2**attempt) * random.uniform(0.75, 1.25)
    if retry_after is not None:
        delay = max(delay, min(retry_after, RETRY_AFTER_CAP_SECONDS))
    return delay


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


class OpenAIProvider:
    name = "openai"
    is_remote = True

    def __init__(
        self,
        *,
        model: str,
        dimensions: int,
        api_key: str,
        base_url: str | None,
        timeout: float,
        batch_size: int = MAX_INPUTS_PER_REQUEST,
        max_tokens_per_request: int = 300_000,
        max_retries: int = 4,
        backoff_seconds: float = 0.5,
    ) -> None:
        self.model = model
        self.dimensions = dimensions
        self.batch_size = min(batch_size, MAX_INPUTS_PER_REQUEST)
        self.max_tokens_per_request = max_tokens_per_request
        self.max_retries = max_retries
        self.backoff_seconds = backoff_seconds
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        prepared = [self._fit(text) for text in texts]
        for start, end in self._batches(prepared):
            out[start:end] = self._request(prepared[start:end])
        return out

    def requests_for(self, texts: list[str]) -> int:
        return sum(1 for _ in self._batches(texts))

    def _fit(self, text: str) -> str:
        """The API refuses an input over 8,191 tokens (and an empty one): cut, with a warning."""
        if not text:
            return " "
        encoding = encoding_for(self.model)
        if encoding is None or count_tokens(text, self.model) <= MAX_TOKENS_PER_INPUT:
            return text
        logger.warning("embedding input of %d chars truncated to %d tokens", len(text), MAX_TOKENS_PER_INPUT)
        return encoding.decode(encoding.encode(text, disallowed_special=())[:MAX_TOKENS_PER_INPUT])

    def _batches(self, texts: list[str]) -> Iterator[tuple[int, int]]:
        """Consecutive (start, end) slices within both the input and the token cap per request."""
        start, tokens = 0, 0
        for i, text in enumerate(texts):
            n = count_tokens(text, self.model)
            if i > start and (i - start >= self.batch_size or tokens + n > self.max_tokens_per_request):
                yield start, i
                start, tokens = i, 0
            tokens += n
        if start < len(texts):
            yield start, len(texts)

    def _request(self, batch: list[str]) -> np.ndarray:
        last_error: Exception | None = None
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client.embeddings.create(
                    model=self.model, input=batch, dimensions=self.dimensions, encoding_format="float"
                )
                return self._vectors(response, len(batch))
            except openai.OpenAIError as exc:
                if not _retryable(exc):
                    raise ApplicationError(
                        f"embedding provider refused the request: {exc}",
                        code="embedding_provider_error",
                        status=502,
                    ) from exc
                last_error = exc
                if attempt < self.max_retries:
                    delay = backoff_delay(attempt, base=self.backoff_seconds, retry_after=_retry_after(exc))
                    logger.warning(
                        "embedding provider attempt %d/%d failed (%s); retrying in %.2fs",
                        attempt + 1,
                        self.max_retries + 1,
                        exc.__class__.__name__,
                        delay,
                    )
                    time.sleep(delay)
        raise ApplicationError(
            f"embedding provider unavailable after {self.max_retries + 1} attempts: {last_error}",
            code="embedding_provider_unavailable",
            status=503,
        ) from last_error

    def _vectors(self, response: object, expected: int) -> np.ndarray:
        data = sorted(response.data, key=lambda item: item.index)  # type: ignore[attr-defined]
        if len(data) != expected:
            raise ApplicationError(
                f"embedding provider returned {len(data)} vectors for {expected} inputs",
                code="embedding_provider_error",
                status=502,
            )
        matrix = np.asarray([item.embedding for item in data], dtype=np.float32)
        if matrix.shape[1] != self.dimensions:
            raise ApplicationError(
                f"embedding provider returned {matrix.shape[1]} dimensions, expected {self.dimensions} "
                f"(does {self.model} support the dimensions parameter?)",
                code="embedding_provider_error",
                status=502,
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1.0, norms)
