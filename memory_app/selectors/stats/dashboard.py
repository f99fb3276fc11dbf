"""Figures for the operators' dashboard: memories, merges over time, review backlog, cache savings."""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass

from django.db.models import Count, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from memory_app.models import DuplicateCluster, Memory, MemoryChange, Tenant
from memory_app.models.review import ClusterStatus
from memory_app.selectors.stats.embeddings import embedding_stats

RESOLUTION_SAMPLE = 5000  # enough for a stable median without reading every resolved cluster


@dataclass(frozen=True)
class DailySeries:
    days: list[dt.date]
    series: dict[str, list[int]]  # name -> one value per day


@dataclass(frozen=True)
class Backlog:
    pending: int
    oldest_pending: dt.datetime | None
    resolved_last_7_days: int
    created_last_7_days: int
    median_hours_to_resolve: float | None
    by_decision: dict[str, int]


@dataclass(frozen=True)
class CacheSavings:
    model: str
    hits: int
    misses: int
    hit_rate: float | None
    provider_calls: int
    tokens_embedded: int
    tokens_avoided: int


def _scoped(qs: QuerySet, tenant: Tenant | None) -> QuerySet:
    # tenant=None is the operator's all-tenants view; a tenant narrows every figure to it.
    return qs if tenant is None else qs.filter(tenant=tenant)


def _days(days: int, now: dt.datetime) -> list[dt.date]:
    today = timezone.localdate(now)
    return [today - dt.timedelta(days=days - 1 - i) for i in range(days)]


def _daily(qs: QuerySet, field: str, group: str | None, days: list[dt.date], names: list[str]) -> DailySeries:
    rows = (
        qs.filter(**{f"{field}__date__gte": days[0]})
        .annotate(day=TruncDate(field))
        .values("day", *([group] if group else []))
        .annotate(n=Count("pk"))
    )
    index = {d: i for i, d in enumerate(days)}
    series = {name: [0] * len(days) for name in names}
    for row in rows:
        name = row[group] if group else names[0]
        if row["day"] in index and name in series:
            series[name][index[row["day"]]] = row["n"]
    return DailySeries(days=days, series=series)


def memories_per_kind(*, tenant: Tenant | None) -> dict[str, dict[str, int]]:
    """kind -> status -> count."""
    out: dict[str, dict[str, int]] = {}
    rows = _scoped(Memory.objects.all(), tenant).values("kind", "status").annotate(n=Count("pk"))
    for row in rows.order_by():
        out.setdefault(row["kind"], {})[row["status"]] = row["n"]
    return out


def changes_per_day(*, tenant: Tenant | None, days: int = 30, now: dt.datetime | None = None) -> DailySeries:
    """Merges and supersedes per day (undone ones included: they happened)."""
    qs = _scoped(MemoryChange.objects.all(), tenant)
    return _daily(qs, "created_at", "operation", _days(days, now or timezone.now()), ["merge", "supersede"])


def review_flow_per_day(
    *, tenant: Tenant | None, days: int = 30, now: dt.datetime | None = None
) -> DailySeries:
    """Clusters queued and clusters decided per day: the backlog shrinks where decided > queued."""
    span = _days(days, now or timezone.now())
    qs = _scoped(DuplicateCluster.objects.all(), tenant)
    queued = _daily(qs, "created_at", None, span, ["queued"])
    decided = _daily(qs.exclude(resolved_at=None), "resolved_at", None, span, ["decided"])
    return DailySeries(days=span, series={**queued.series, **decided.series})


def review_backlog(*, tenant: Tenant | None, now: dt.datetime | None = None) -> Backlog:
    now = now or timezone.now()
    week_ago = now - dt.timedelta(days=7)
    qs = _scoped(DuplicateCluster.objects.all(), tenant)
    pending = qs.filter(status=ClusterStatus.PENDING)
    durations = [
        (resolved - created).total_seconds() / 3600
        for created, resolved in qs.filter(resolved_at__gte=now - dt.timedelta(days=30))
        .order_by("-resolved_at")
        .values_list("created_at", "resolved_at")[:RESOLUTION_SAMPLE]
    ]
    decisions = qs.exclude(status=ClusterStatus.PENDING).values("status").annotate(n=Count("pk")).order_by()
    return Backlog(
        pending=pending.count(),
        oldest_pending=pending.order_by("created_at").values_list("created_at", flat=True).first(),
        resolved_last_7_days=qs.filter(resolved_at__gte=week_ago).count(),
        created_last_7_days=qs.filter(created_at__gte=week_ago).count(),
        median_hours_to_resolve=statistics.median(durations) if durations else None,
        by_decision={str(ClusterStatus(row["status"]).label).lower(): row["n"] for row in decisions},
    )


def embedding_cache_savings() -> list[CacheSavings]:
    """Per embedding model, summed over every tenant's private cache (staff only)."""
    out = []
    for s in embedding_stats(tenant=None):
        hits = s.exact_hits + s.normalized_hits + s.near_hits
        total = hits + s.misses
        out.append(
            CacheSavings(
                model=s.model,
                hits=hits,
                misses=s.misses,
                hit_rate=hits / total if total else None,
                provider_calls=s.provider_calls,
                tokens_embedded=s.tokens_embedded,
                tokens_avoided=s.tokens_avoided,
            )
        )
    return out
