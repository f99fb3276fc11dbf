"""Quotas: a request rate per API key and a number of active memories per tenant.

Both count in the "quota" cache: Redis when QUOTA_REDIS_URL is set (its INCR is atomic, so
concurrent requests are counted exactly), else a table of the database (Django's database cache:
its increment reads then writes, so concurrent requests of one key may be undercounted by a few).
A failing cache never fails a request: the check is skipped and logged, as a limiter that went
down must not take the API with it.

The request rate is a fixed one-minute window per key; the answer past it says how many seconds
are left in the window. The memory count is read from the database at most once per
QUOTA_COUNT_TTL_SECONDS per tenant and kept up to date by the stores in between.
"""

from __future__ import annotations

import logging
import math
import time

from django.core.cache import caches

from memory_app.conf import quota_config
from memory_app.errors import ApplicationError
from memory_app.models import Memory, Tenant
from memory_app.models.memory import MemoryStatus

logger = logging.getLogger(__name__)
WINDOW_SECONDS = 60


def request_rate_wait(*, key_id: int, now: float | None = None) -> float | None:
    """Count one request of the key; the seconds until its window ends when it is over the rate,
    else None."""
    limit = quota_config().requests_per_minute
    if limit <= 0:
        return None
    now = time.time() if now is None else now
    window = int(now // WINDOW_SECONDS)
    key = f"rate:{key_id}:{window}"
    try:
        cache = caches["quota"]
        cache.add(key, 0, timeout=2 * WINDOW_SECONDS)
        count = cache.incr(key)
    except Exception as exc:  # the limiter's store is down: serve the request, say so in the log
        logger.warning("request rate not counted (%s)", exc)
        return None
    if count <= limit:
        return None
    return max(1.0, math.ceil((window + 1) * WINDOW_SECONDS - now))


def _count_key(tenant: Tenant) -> str:
    return f"memories:{tenant.pk}"


def memory_quota_check(*, tenant: Tenant, adding: int) -> None:
    """Refuse (403 quota_exceeded) a write that could take the tenant past its active memories.
    `adding` counts every item of the batch, though some may merge into existing memories."""
    limit = quota_config().max_memories
    if limit <= 0 or adding <= 0:
        return
    try:
        cache = caches["quota"]
        count = cache.get(_count_key(tenant))
        if count is None:
            count = Memory.objects.filter(tenant=tenant, status=MemoryStatus.ACTIVE).count()
            cache.set(_count_key(tenant), count, timeout=quota_config().count_ttl_seconds)
    except Exception as exc:  # the quota's store is down: the write goes through, said in the log
        logger.warning("memory quota not checked (%s)", exc)
        return
    if count + adding > limit:
        raise ApplicationError(
            f"The tenant holds {count} active memories; storing {adding} more would pass its quota "
            f"of {limit}. Delete memories or ask the operator to raise QUOTA_MAX_MEMORIES.",
            code="quota_exceeded",
            status=403,
        )


def memory_quota_note(*, tenant: Tenant, added: int) -> None:
    """Count memories a write created into the tenant's cached count (if it is cached)."""
    if quota_config().max_memories <= 0 or added <= 0:
        return
    try:
        caches["quota"].incr(_count_key(tenant), added)
    except ValueError:  # not cached (expired): the next check counts from the database
        pass
    except Exception as exc:
        logger.warning("memory quota count not updated (%s)", exc)
