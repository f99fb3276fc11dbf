"""Micro-batching of the local model across the threads of one process.

One text costs MiniLM about 16 ms of CPU alone and about 4.5 ms inside a batch (bench/load.py), so
under concurrent load it pays to embed the texts of several requests in one forward pass. Callers
hand their texts to `MicroBatcher.embed` and block; one background thread takes what is queued,
waits up to `wait_seconds` for more (never past `max_batch` texts), runs one forward pass and
hands every caller its rows. At low load a request waits at most `wait_seconds`; under load the
batch fills while the previous forward pass runs, so batching costs nothing extra there.

A companion can only come from another request being served by this process. Given `in_flight`
(the process's requests in progress, `RequestsInFlight`), the batcher waits only while more
requests are in progress than the batch holds: a lone request, the common case at low load, then
runs at once rather than paying the wait for a companion that cannot come.

Fork-safe: the thread is started lazily in the process that uses it (a gunicorn or Celery worker),
never inherited from the parent.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass
class _Request:
    texts: list[str]
    query: bool = False  # a search's query: its own pass (local_embed's `query`)
    done: threading.Event = field(default_factory=threading.Event)
    result: np.ndarray | None = None
    error: BaseException | None = None

    def wait(self) -> np.ndarray:
        self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


class RequestsInFlight:
    """The requests this process is serving now (Django's request_started / request_finished)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def started(self, **_: object) -> None:
        with self._lock:
            self.count += 1

    def finished(self, **_: object) -> None:
        with self._lock:
            self.count = max(self.count - 1, 0)

    def __call__(self) -> int:
        return self.count


# The process's count, kept by memory_app.apps from Django's request signals.
REQUESTS_IN_FLIGHT = RequestsInFlight()


class MicroBatcher:
    def __init__(
        self,
        embed: Callable[..., np.ndarray],  # (texts, *, query) -> rows: local_embed
        *,
        wait_seconds: float,
        max_batch: int,
        in_flight: Callable[[], int] | None = None,
    ) -> None:
        self._embed = embed
        self.wait_seconds = wait_seconds
        self.max_batch = max_batch
        # None: always wait for companions (callers on threads of their own, as in the tests).
        self._in_flight = in_flight
        self._pid = -1
        self.batches = 0  # forward passes run, and the texts they held (for measurements)
        self.texts = 0

    def _ensure_worker(self) -> None:
        if self._pid == os.getpid():
            return
        self._queue: deque[_Request] = deque()
        self._cond = threading.Condition()
        self._pid = os.getpid()
        threading.Thread(target=self._loop, name="embedding-batcher", daemon=True).start()

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.submit(texts)()

    def submit(self, texts: list[str], *, query: bool = False) -> Callable[[], np.ndarray]:
        """Queue `texts` and return at once; the returned function waits for their rows (or raises
        the pass's error). The caller may do other work meanwhile: the pass runs on this batcher's
        thread, and torch releases the GIL while it computes. A search's queries (`query`) share a
        pass only with other queries, since theirs is another model (`local_embed`)."""
        if len(texts) >= self.max_batch:  # already a full batch on its own
            vectors = self._embed(texts, query=query)
            return lambda: vectors
        request = _Request(texts=list(texts), query=query)
        self._ensure_worker()
        with self._cond:
            self._queue.append(request)
            self._cond.notify()
        return request.wait

    def _take(self) -> list[_Request]:
        """The next batch: what is queued, plus what arrives within wait_seconds, up to max_batch,
        of the first request's kind (queries or not); a request of the other kind starts the next."""
        with self._cond:
            while not self._queue:
                self._cond.wait()
            batch = [self._queue.popleft()]
            size = len(batch[0].texts)
            deadline = time.monotonic() + self.wait_seconds
            while size < self.max_batch:
                if not self._queue:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or not self._companion_possible(len(batch)):
                        break
                    self._cond.wait(remaining)
                    continue
                following = self._queue[0]
                if following.query != batch[0].query or size + len(following.texts) > self.max_batch:
                    break
                request = self._queue.popleft()
                batch.append(request)
                size += len(request.texts)
        return batch

    def _companion_possible(self, batched: int) -> bool:
        return self._in_flight is None or self._in_flight() > batched

    def _loop(self) -> None:
        while True:
            batch = self._take()
            texts = [text for request in batch for text in request.texts]
            try:
                vectors = self._embed(texts, query=batch[0].query)
            except BaseException as exc:  # every caller of the batch gets the error
                for request in batch:
                    request.error = exc
                    request.done.set()
                continue
            self.batches += 1
            self.texts += len(texts)
            start = 0
            for request in batch:
                request.result = vectors[start : start + len(request.texts)]
                start += len(request.texts)
                request.done.set()
