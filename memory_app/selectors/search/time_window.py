"""A query's time expression applied to a search: a boost for memories whose event date falls in
its window (the default), or a filter to them, or nothing.

extraction/query_time.py reads the window from the query against the request's `now` (the server's
time when the request gives none); this module narrows the filters (filter) or scales the ranked
scores (boost), and says which window it applied so the response can report it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
from django.utils import timezone

from memory_app.conf import query_time_config
from memory_app.db import fetch_all
from memory_app.extraction.query_time import query_window
from memory_app.models import Tenant
from memory_app.selectors.search.candidates import MEMORY_TABLE
from memory_app.selectors.search.types import SearchFilters

TIME_MODES = ("boost", "filter", "off")


@dataclass(frozen=True)
class TimeQuery:
    """How a request wants time in its query read: `now` (None: the server's time) and `mode`
    (None: SEARCH_QUERY_TIME)."""

    now: datetime | None = None
    mode: str | None = None


@dataclass(frozen=True)
class AppliedWindow:
    start: datetime
    end: datetime
    expression: str
    period: str
    applied: str  # "boost" or "filter"


def window_resolve(query: str, time_query: TimeQuery | None) -> AppliedWindow | None:
    """The window the query's time expression names, with how it applies; None when the query
    names no time or time reading is off."""
    mode = (time_query.mode if time_query else None) or query_time_config().mode
    if mode == "off":
        return None
    now = (time_query.now if time_query else None) or timezone.now()
    window = query_window(query, now)
    if window is None:
        return None
    return AppliedWindow(window.start, window.end, window.expression, window.period, mode)


def window_filters(filters: SearchFilters, window: AppliedWindow | None) -> SearchFilters:
    """`filters` narrowed to the window's event dates when it applies as a filter (the narrower
    of the window and any event_after/event_before already given)."""
    if window is None or window.applied != "filter":
        return filters
    after = max(filter(None, (filters.event_after, window.start)))
    before = min(filter(None, (filters.event_before, window.end)))
    return replace(filters, event_after=after, event_before=before)


def window_factors(*, tenant: Tenant, ids: list[int], window: AppliedWindow | None) -> np.ndarray:
    """Per id, the boost of a memory whose event date lies in the window (1 elsewhere, and for
    memories without an event date). Read only when a boost applies: one query of the ranked ids."""
    factors = np.ones(len(ids))
    if window is None or window.applied != "boost" or not ids:
        return factors
    rows = fetch_all(
        f"SELECT m.id FROM {MEMORY_TABLE} m WHERE m.tenant_id = %s AND m.id = ANY(%s) "
        "AND m.event_date >= %s AND m.event_date < %s",
        [tenant.pk, ids, window.start, window.end],
    )
    inside = {row[0] for row in rows}
    boost = 1.0 + query_time_config().boost
    for index, memory_id in enumerate(ids):
        if memory_id in inside:
            factors[index] = boost
    return factors
