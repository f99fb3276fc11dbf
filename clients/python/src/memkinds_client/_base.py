"""What the sync and async clients share: configuration, retry policy, response handling."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx

from memkinds_client.errors import MemoryApiError, Unavailable
from memkinds_client.operations import JSONL, Call

RETRY_STATUSES = frozenset({429, 503})  # the server says: not done, try again later
IDEMPOTENT = frozenset({"GET", "DELETE"})
MAX_DELAY = 30.0
USER_AGENT = "memkinds-client/1.1"
# Long enough for a server's first request after start-up, or a long /context/all on a busy host.
DEFAULT_TIMEOUT = 60.0


class ClientBase:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        max_retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        """`base_url`: the service's root (http://host:8000); `timeout` in seconds per request;
        `max_retries` on 429/503, refused connections and, for GET/DELETE, timeouts, waiting
        `backoff` x 2^attempt seconds (with jitter; a Retry-After header wins), at most 30 s."""
        if max_retries < 0 or backoff < 0:
            raise ValueError("max_retries and backoff must be >= 0")
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.backoff = backoff
        self._timeout = timeout
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        retry_after = response.headers.get("Retry-After") if response is not None else None
        if retry_after and retry_after.replace(".", "", 1).isdigit():
            return min(float(retry_after), MAX_DELAY)
        return float(min(self.backoff * 2**attempt, MAX_DELAY) * (0.5 + random.random() / 2))

    def _retry_on_exception(self, call: Call, exc: httpx.TransportError, attempt: int) -> bool:
        if attempt >= self.max_retries:
            return False
        never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
        return never_sent or (isinstance(exc, httpx.TimeoutException) and call.method in IDEMPOTENT)

    def _retry_on_response(self, response: httpx.Response, attempt: int) -> bool:
        return response.status_code in RETRY_STATUSES and attempt < self.max_retries

    @staticmethod
    def _failure(exc: httpx.TransportError) -> Unavailable:
        code = "timeout" if isinstance(exc, httpx.TimeoutException) else "connection_error"
        return Unavailable(status=None, code=code, message=str(exc) or type(exc).__name__)

    @staticmethod
    def _body(c: Call) -> dict[str, Any]:
        if c.content is None:
            return {"json": c.json}
        return {"content": c.content, "headers": {"Content-Type": JSONL}}

    @staticmethod
    def _result(response: httpx.Response) -> Any:
        if response.is_success and response.headers.get("Content-Type", "").startswith(JSONL):
            return [json.loads(line) for line in response.text.splitlines() if line.strip()]
        if response.is_success:
            return response.json() if response.content else None
        try:
            body = response.json()
        except ValueError:
            body = None
        raise MemoryApiError.from_response(response.status_code, body, response.text)
