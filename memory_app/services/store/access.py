"""Access counts of what reads returned, written off the request path.

A search or a context call answers from memories and counts an access for each (the ACE fields
`access_count` and `last_accessed_at`). The read itself never writes: the view that answered calls
`memory_access_record` with the ids it showed.

With MEMORY_ACCESS_FLUSH_SECONDS > 0 (the default, 1 s) the counts are added up in the process and
a background thread writes them every that many seconds, one UPDATE per tenant
(`memory_touch_counts`), so a busy server pays one statement a second instead of one per read, and
a row read ten times in that second is written once. The price: counts not yet written are lost if
the process is killed (at a normal exit they are written), and a count shows up to that many
seconds late. 0 writes each read's counts at once, after the caller's transaction commits.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from django.db import close_old_connections, connections, transaction
from django.utils import timezone

from memory_app.conf import store_config
from memory_app.models import Tenant
from memory_app.services.rows.memories import memory_touch_counts

logger = logging.getLogger(__name__)

# A process holding more rows than this writes them at once rather than wait for the thread.
FLUSH_AT_ROWS = 5_000


def memory_access_record(*, tenant: Tenant, memory_ids: Sequence[int]) -> None:
    """Count one access for each distinct id a read answered with; never fails the read."""
    if not memory_ids:
        return
    counts = Counter(set(memory_ids))
    if store_config().access_flush_seconds <= 0:
        transaction.on_commit(lambda: _write(tenant.pk, counts, timezone.now()))
        return
    _PENDING.add(tenant.pk, counts)


def access_flush() -> int:
    """Write every count this process holds now; the number of rows written."""
    return _PENDING.flush()


def _write(tenant_id: int, counts: Counter[int], at: datetime) -> int:
    try:
        return memory_touch_counts(tenant_id=tenant_id, counts=counts, at=at)
    except Exception as exc:  # counting an access must never fail a read, nor stop the thread
        logger.warning("access count update failed for %d rows: %s", len(counts), exc)
        return 0


class _Pending:
    """Counts per tenant waiting for the thread, and the thread (started on first use, so each
    forked server process has its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[int, Counter[int]] = {}
        self._latest: dict[int, datetime] = {}
        self._rows = 0
        self._thread: threading.Thread | None = None

    def add(self, tenant_id: int, counts: Counter[int]) -> None:
        with self._lock:
            held = self._counts.setdefault(tenant_id, Counter())
            before = len(held)
            held.update(counts)
            self._rows += len(held) - before
            self._latest[tenant_id] = timezone.now()
            full = self._rows >= FLUSH_AT_ROWS
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="access-counts", daemon=True)
                self._thread.start()
        if full:
            self.flush()

    def flush(self) -> int:
        with self._lock:
            batches, latest = self._counts, self._latest
            self._counts, self._latest, self._rows = {}, {}, 0
        return sum(_write(tenant_id, counts, latest[tenant_id]) for tenant_id, counts in batches.items())

    def _run(self) -> None:
        # Wakes at least every second, so a changed interval applies without a restart.
        flushed = time.monotonic()
        while True:
            interval = store_config().access_flush_seconds
            time.sleep(min(max(interval, 0.05), 1.0))
            if time.monotonic() - flushed < interval:
                continue
            flushed = time.monotonic()
            if not self._rows:
                # Idle: this thread's connection is closed until there is something to write.
                connections.close_all()
                continue
            close_old_connections()  # renewed when too old or broken
            self.flush()


_PENDING = _Pending()
atexit.register(access_flush)
