"""The operators' dashboard (linked from the admin index)."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from memory_app.admin.dashboard.charts import grouped_bars_svg, stacked_hbars_svg
from memory_app.models import Tenant
from memory_app.selectors.stats.dashboard import (
    changes_per_day,
    embedding_cache_savings,
    memories_per_kind,
    review_backlog,
    review_flow_per_day,
)

DAYS = 30


def dashboard_view(request: HttpRequest) -> HttpResponse:
    if not request.user.has_perm("memory_app.view_memory"):
        raise PermissionDenied
    tenants = list(Tenant.objects.order_by("name").only("pk", "name"))
    chosen = request.GET.get("tenant", "")
    tenant = next((t for t in tenants if str(t.pk) == chosen), None)
    kinds = memories_per_kind(tenant=tenant)
    changes = changes_per_day(tenant=tenant, days=DAYS)
    flow = review_flow_per_day(tenant=tenant, days=DAYS)
    labels = [d.strftime("%b %d") for d in changes.days]
    context = {
        **admin.site.each_context(request),
        "title": "Memory dashboard",
        "tenants": tenants,
        "tenant": tenant,
        "days": DAYS,
        "kinds": kinds,
        "kind_totals": {k: sum(v.values()) for k, v in kinds.items()},
        "kinds_chart": stacked_hbars_svg(kinds, title="Memories per kind, by status") if kinds else "",
        "changes_chart": grouped_bars_svg(
            labels, changes.series, title=f"Merges and supersedes, last {DAYS} days"
        ),
        "change_totals": {k: sum(v) for k, v in changes.series.items()},
        "flow_chart": grouped_bars_svg(
            labels, flow.series, title=f"Review clusters queued and decided, last {DAYS} days"
        ),
        "backlog": review_backlog(tenant=tenant),
        "cache": embedding_cache_savings(),
    }
    return TemplateResponse(request, "admin/memory_app/dashboard.html", context)
