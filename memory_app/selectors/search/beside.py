"""A search's full-text half on a connection of its own, beside the vector half.

The two halves of a hybrid search need nothing from each other until they are fused: BM25 needs no
vector, and the vector half needs only the query's embedding. Run one after the other, a search
costs BM25 plus the vector query; side by side it costs the longer of the two. In a 100 k scope
BM25 takes longer than embedding the query, and the vector query then waited for it (bench/peer.py,
docs/PERFORMANCE.md).

The query's embedding cache row is written on the pool too, and nobody waits for it.

The side half runs on a small per-process pool of threads, each with its own database connection
(Django's connections are per thread), so a process holds up to SEARCH_LEXICAL_THREADS more
connections. It runs inline, on the caller's own connection, when:
- the caller is inside a transaction: another connection would not see its uncommitted rows;
- every pool thread is busy (never queue behind another request's search);
- SEARCH_LEXICAL_THREADS is 0.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from memory_app.conf import search_config
from memory_app.db import checked_by_first_statement
from memory_app.db_routing import read_alias

T = TypeVar("T")
log = logging.getLogger(__name__)

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_slots: threading.BoundedSemaphore | None = None
_size = 0
_opened: list[BaseDatabaseWrapper] = []  # each pool thread's connection wrappers, for beside_close


class Beside(Generic[T]):
    """A call's result: computed on a pool thread, or inline (now, or when `run_inline` or
    `result` is called first)."""

    def __init__(self, *, future: Future[T] | None = None, inline: Callable[[], T] | None = None) -> None:
        self._future = future
        self._inline = inline
        self._value: T | None = None

    @property
    def on_thread(self) -> bool:
        return self._future is not None

    def run_inline(self) -> None:
        """Run the call here if it is to run inline and has not run yet."""
        if self._inline is not None:
            call, self._inline = self._inline, None
            self._value = call()

    def result(self) -> T:
        if self._future is not None:
            return self._future.result()
        self.run_inline()
        return self._value  # type: ignore[return-value]


def run_beside(call: Callable[[], T], *, detached: bool = False, inline_later: bool = False) -> Beside[T]:
    """Start `call` on a pool thread when it may run there, else run it now (with `inline_later`,
    when the caller says: `run_inline`, or `result`). `detached`: nobody waits for it (a cache
    write), so an error is logged rather than raised to a caller."""
    slots = _pool_slots()
    if slots is None or _in_transaction() or not slots.acquire(blocking=False):
        return _inline(call, later=inline_later)
    assert _pool is not None
    # The caller's context variables (a search's scope counts) go with the call.
    context = contextvars.copy_context()
    try:
        future = _pool.submit(_on_thread, context, call, slots)
    except RuntimeError:  # the pool was shut down (interpreter exit): run inline
        slots.release()
        return _inline(call, later=inline_later)
    if detached:
        future.add_done_callback(_log_error)
    return Beside(future=future)


def _inline(call: Callable[[], T], *, later: bool) -> Beside[T]:
    beside = Beside(inline=call)
    if not later:
        beside.run_inline()
    return beside


def _log_error(future: Future[Any]) -> None:
    error = future.exception()
    if error is not None:
        log.warning("background search step failed: %r", error)


def _on_thread(context: contextvars.Context, call: Callable[[], T], slots: threading.BoundedSemaphore) -> T:
    try:
        # A pool thread serves no request, so no request signal closes its broken or aged
        # connections: close them here, as Django does at each request's start. The call's first
        # statement then checks each (Django's own check would add a round trip to every BM25
        # half): these calls read, or write one idempotent cache row, so a repeat is safe.
        for connection in connections.all(initialized_only=True):
            connection.close_if_unusable_or_obsolete()
        return checked_by_first_statement(lambda: context.run(call))
    finally:
        for connection in connections.all(initialized_only=True):
            if connection not in _opened:
                _opened.append(connection)
        slots.release()


def beside_close() -> None:
    """Stop the pool and close its threads' connections (a test's end, before its database is
    flushed; a bench moving to another database). The next call starts new threads, whose
    connections follow the current settings."""
    global _pool, _slots, _size
    with _lock:
        pool, _pool, _slots, _size = _pool, None, None, 0
    if pool is not None:
        pool.shutdown(wait=True)
    for connection in _opened:
        raw = connection.connection
        if raw is not None:
            raw.close()  # the psycopg connection itself: the wrapper belongs to a stopped thread
    _opened.clear()


def _in_transaction() -> bool:
    return any(connections[alias].in_atomic_block for alias in {DEFAULT_DB_ALIAS, read_alias()})


def _pool_slots() -> threading.BoundedSemaphore | None:
    """The pool's free-thread count, the pool made (or remade at a new size) on first use."""
    global _pool, _slots, _size
    size = search_config().lexical_threads
    if size == _size:
        return _slots
    with _lock:
        if size != _size:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="search-beside") if size else None
            _slots = threading.BoundedSemaphore(size) if size else None
            _size = size
            if old is not None:
                old.shutdown(wait=False)
    return _slots
