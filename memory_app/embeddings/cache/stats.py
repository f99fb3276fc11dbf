"""Embedding-cache statistics: counted in process, written with F() in one UPDATE per flush.

Why not an UPDATE per call: `embed_texts` usually runs inside the caller's write transaction, and
an UPDATE of the one stats row there would hold its row lock until that transaction commits,
serialising every concurrent write in the service. So counts accumulate here and are flushed after
commit (`transaction.on_commit`), at most every EMBEDDING_STATS_FLUSH_SECONDS, in a short
transaction of their own. A crash loses at most that many seconds of counts, never a write.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, fields

from django.core.exceptions import SynchronousOnlyOperation
from django.db import DatabaseError, transaction
from django.db.models import F, Q
from django.utils import timezone

from memory_app.conf import embeddings_config
from memory_app.db import execute, set_local
from memory_app.models import EmbeddingCacheEntry, EmbeddingCacheStats, Tenant

logger = logging.getLogger(__name__)


@dataclass
class BatchCounts:
    """What one `embed_texts` call did, text by text."""

    exact_hits: int = 0
    normalized_hits: int = 0
    near_hits: int = 0
    misses: int = 0
    provider_calls: int = 0
    tokens_embedded: int = 0
    tokens_avoided: int = 0

    @property
    def texts(self) -> int:
        return self.exact_hits + self.normalized_hits + self.near_hits + self.misses

    def add(self, other: BatchCounts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


COUNTER_FIELDS = [f.name for f in fields(BatchCounts)]
# What "the cache database cannot be used here" looks like: a database error, or database access
# refused in this context (async code, or a test without a database): embed without the cache.
CACHE_ERRORS = (DatabaseError, SynchronousOnlyOperation, RuntimeError)


class _Pending:
    """Counts not yet written, per (tenant id, model), plus hit counts per cache row."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_model: dict[tuple[int | None, str], BatchCounts] = {}
        self.entry_hits: Counter[int] = Counter()
        self.last_flush = time.monotonic()
        # Since process start, for the summary log line.
        self.totals: dict[str, BatchCounts] = {}
        self.texts_seen = 0


_pending = _Pending()


def stats_record(
    *, model: str, counts: BatchCounts, hit_entry_ids: list[int], tenant_id: int | None = None
) -> None:
    """Account one call of a tenant; schedule a flush after the caller's commit when one is due."""
    with _pending.lock:
        _pending.by_model.setdefault((tenant_id, model), BatchCounts()).add(counts)
        _pending.entry_hits.update(hit_entry_ids)
        _pending.totals.setdefault(model, BatchCounts()).add(counts)
        before = _pending.texts_seen
        _pending.texts_seen += counts.texts
        every = embeddings_config().stats_log_every
        crossed = before // every != _pending.texts_seen // every
        due = time.monotonic() - _pending.last_flush >= embeddings_config().stats_flush_seconds
        summary = _summary_line() if crossed else None
    if summary:
        logger.info(summary)
    if due:
        try:
            transaction.on_commit(embedding_stats_flush, robust=True)
        except CACHE_ERRORS as exc:
            logger.debug("embedding statistics not flushed: %s", exc)


def _summary_line() -> str:
    price = embeddings_config().price_per_1k_tokens
    parts = []
    for model, c in sorted(_pending.totals.items()):
        hits = c.exact_hits + c.normalized_hits + c.near_hits
        parts.append(
            f"{model}: texts={c.texts} exact={c.exact_hits} normalized={c.normalized_hits} "
            f"near={c.near_hits} misses={c.misses} hit_rate={hits / max(c.texts, 1):.3f} "
            f"provider_calls={c.provider_calls} tokens_avoided={c.tokens_avoided} "
            f"cost_saved=${c.tokens_avoided / 1000 * price:.4f}"
        )
    return "embedding cache summary (this process): " + "; ".join(parts)


def embedding_stats_flush(*, log_failure: bool = True) -> None:
    """Write the pending counts with F() (one UPDATE per model and one for row hit counts)."""
    with _pending.lock:
        by_model, _pending.by_model = _pending.by_model, {}
        entry_hits, _pending.entry_hits = _pending.entry_hits, Counter()
        _pending.last_flush = time.monotonic()
    if not by_model and not entry_hits:
        return
    try:
        with transaction.atomic():
            # Statistics may lose a few counts in a server crash; they need no WAL flush per write.
            set_local({"synchronous_commit": "off"})
            for (tenant_id, model), counts in by_model.items():
                _add_counts(tenant_id, model, counts)
            _add_entry_hits(entry_hits)
    except CACHE_ERRORS as exc:
        if log_failure:
            logger.warning(
                "embedding cache statistics not written (%s); %s counts dropped", exc, len(by_model)
            )


def _add_counts(tenant_id: int | None, model: str, counts: BatchCounts) -> None:
    increments = {name: F(name) + getattr(counts, name) for name in COUNTER_FIELDS if getattr(counts, name)}
    if not increments:
        return
    # tenant_id None is the row of calls made outside any tenant (IS NULL, as filter(tenant_id=None)).
    owner = Q(tenant_id__isnull=True) if tenant_id is None else Q(tenant_id=tenant_id)
    row = EmbeddingCacheStats.objects.filter(owner, model=model)
    if not row.update(**increments, updated_at=timezone.now()):
        if tenant_id is not None and not Tenant.objects.filter(pk=tenant_id).exists():
            return  # the tenant was deleted since: its counts go with it
        EmbeddingCacheStats.objects.bulk_create(
            [EmbeddingCacheStats(tenant_id=tenant_id, model=model)], ignore_conflicts=True
        )
        row.update(**increments, updated_at=timezone.now())


def _add_entry_hits(entry_hits: Counter[int]) -> None:
    if not entry_hits:
        return
    ids = list(entry_hits)
    counts = [entry_hits[i] for i in ids]
    table = EmbeddingCacheEntry._meta.db_table
    execute(
        f"UPDATE {table} AS e SET hit_count = e.hit_count + h.n, last_hit_at = now() "
        "FROM unnest(%s::bigint[], %s::int[]) AS h(id, n) WHERE e.id = h.id",
        [ids, counts],
    )


def stats_pending_reset() -> None:
    """Forget unwritten counts (tests, and a benchmark that starts from zero)."""
    with _pending.lock:
        _pending.by_model.clear()
        _pending.entry_hits.clear()
        _pending.totals.clear()
        _pending.texts_seen = 0


def _flush_at_exit() -> None:
    # At interpreter shutdown the database (a test database) and the log streams may be gone
    # already; a warning there would only print a logging traceback.
    with contextlib.suppress(Exception):
        embedding_stats_flush(log_failure=False)


atexit.register(_flush_at_exit)
