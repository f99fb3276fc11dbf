"""The review queue: pending duplicate clusters, most confident first, with a bulk merge."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, F, OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.timesince import timesince

from memory_app.admin.review.views import ClusterReviewViews
from memory_app.db_routing import run_read
from memory_app.models import ClusterMember, DuplicateCluster
from memory_app.models.review import ClusterStatus
from memory_app.services.actors import Actor
from memory_app.services.review.clusters import BulkReport, cluster_bulk_keep_apart, cluster_bulk_merge


class StatusFilter(admin.SimpleListFilter):
    """Pending by default: the queue is what a reviewer opens the page for."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [*ClusterStatus.choices, ("all", "All")]

    def choices(self, changelist: Any) -> Any:
        value = self.value() or ClusterStatus.PENDING
        for lookup, title in self.lookup_choices:
            yield {
                "selected": value == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value() or ClusterStatus.PENDING
        return queryset if value == "all" else queryset.filter(status=value)


class ConfidenceFilter(admin.SimpleListFilter):
    title = "judge confidence"
    parameter_name = "confidence"
    BANDS = {"high": (0.9, 1.01), "medium": (0.7, 0.9), "low": (0.0, 0.7)}

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("high", "High (≥ 0.9): usually safe"),
            ("medium", "Medium (0.7 to 0.9)"),
            ("low", "Low (< 0.7)"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        band = self.BANDS.get(self.value() or "")
        if band is None:
            return queryset
        return queryset.filter(confidence__gte=band[0], confidence__lt=band[1])


class ClusterMemberInline(admin.TabularInline):
    model = ClusterMember
    extra = 0
    fields = ["memory", "distance"]
    readonly_fields = ["memory", "distance"]
    can_delete = False


@admin.register(DuplicateCluster)
class DuplicateClusterAdmin(ClusterReviewViews, admin.ModelAdmin):
    list_display = [
        "review_link",
        "preview",
        "size",
        "scope",
        "verdict_badge",
        "confidence_display",
        "max_distance_display",
        "age",
        "status",
    ]
    list_display_links = None  # the "Review" column links to the cluster page
    list_filter = [StatusFilter, ConfidenceFilter, "verdict", "origin", "kind", "tenant"]
    search_fields = ["user_id", "namespace", "reason", "members__memory__text"]
    search_help_text = "Search member texts, user id, namespace or the judge's reason."
    list_select_related = ["tenant"]
    list_per_page = 50
    actions = ["bulk_merge", "bulk_keep_apart"]
    change_list_template = "admin/memory_app/duplicatecluster/change_list.html"

    def get_ordering(self, request: HttpRequest) -> list[Any]:
        return [F("confidence").desc(nulls_last=True), "created_at", "pk"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[DuplicateCluster]:
        first_text = (
            ClusterMember.objects.filter(cluster=OuterRef("pk")).order_by("pk").values("memory__text")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(member_count=Count("members", distinct=True), first_text=Subquery(first_text[:1]))
        )

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # a cluster's decision is history; undo, don't delete
        return actions

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # clusters come from the write path and compaction (or seed_review_demo)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        custom = [
            path(
                "<int:cluster_id>/review/", wrap(self.review_view), name="memory_app_duplicatecluster_review"
            ),
            path("<int:cluster_id>/undo/", wrap(self.undo_view), name="memory_app_duplicatecluster_undo"),
        ]
        return custom + super().get_urls()

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        # Listing the queue only reads, so a replica within the lag limit may serve it (rendered inside
        # the read block: the template's queries belong to it). A POST runs the bulk action: primary.
        if request.method != "GET":
            return super().changelist_view(request, extra_context)

        def listing() -> HttpResponse:
            response = super(DuplicateClusterAdmin, self).changelist_view(request, extra_context)
            render = getattr(response, "render", None)
            return render() if render is not None else response

        return run_read(listing)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        # A cluster is decided on its review page, never edited field by field.
        if not str(object_id).isdigit():
            return super().change_view(request, object_id, form_url, extra_context)
        return self.review_view(request, int(object_id))

    @admin.display(description="cluster", ordering="pk")
    def review_link(self, obj: DuplicateCluster) -> str:
        url = reverse("admin:memory_app_duplicatecluster_review", args=[obj.pk])
        label = "Review" if obj.status == ClusterStatus.PENDING else "Open"
        return format_html('<a class="button" href="{}">{} #{}</a>', url, label, obj.pk)

    @admin.display(description="first member")
    def preview(self, obj: DuplicateCluster) -> str:
        text = getattr(obj, "first_text", "") or ""
        return text if len(text) <= 70 else text[:67] + "…"

    @admin.display(description="size", ordering="member_count")
    def size(self, obj: DuplicateCluster) -> int:
        return getattr(obj, "member_count", 0)

    @admin.display(description="scope")
    def scope(self, obj: DuplicateCluster) -> str:
        return format_html(
            '<span class="nowrap">{} · {}</span><br><span class="quiet">{} · {}</span>',
            obj.user_id or "(no user)",
            obj.namespace,
            obj.tenant,
            obj.kind,
        )

    @admin.display(description="judge verdict", ordering="verdict")
    def verdict_badge(self, obj: DuplicateCluster) -> str:
        verdict = obj.verdict or "unsure"
        # The reason on hover: for a "differs" verdict it names the sign, number or name at stake.
        return format_html(
            '<span class="verdict verdict-{}" title="{}">{}</span>', verdict, obj.reason, verdict
        )

    @admin.display(description="confidence", ordering="confidence")
    def confidence_display(self, obj: DuplicateCluster) -> str:
        return "—" if obj.confidence is None else f"{obj.confidence:.2f}"

    @admin.display(description="largest distance", ordering="max_distance")
    def max_distance_display(self, obj: DuplicateCluster) -> str:
        return "—" if obj.max_distance is None else f"{obj.max_distance:.3f}"

    @admin.display(description="age", ordering="created_at")
    def age(self, obj: DuplicateCluster) -> str:
        return timesince(obj.created_at).split(",")[0]

    @admin.action(
        description="Merge selected clusters (keeps each cluster's longest text)", permissions=["change"]
    )
    def bulk_merge(self, request: HttpRequest, queryset: QuerySet[DuplicateCluster]) -> None:
        self._bulk_resolve(request, queryset, cluster_bulk_merge, done="Merged")

    @admin.action(description="Keep selected clusters apart (different facts)", permissions=["change"])
    def bulk_keep_apart(self, request: HttpRequest, queryset: QuerySet[DuplicateCluster]) -> None:
        self._bulk_resolve(request, queryset, cluster_bulk_keep_apart, done="Kept apart")

    def _bulk_resolve(
        self,
        request: HttpRequest,
        queryset: QuerySet[DuplicateCluster],
        resolve: Callable[..., BulkReport],
        *,
        done: str,
    ) -> None:
        if not self.has_change_permission(request):
            self.message_user(request, "You may not resolve clusters.", messages.ERROR)
            return
        actor = Actor.staff(request.user)
        by_tenant: dict[Any, list[int]] = {}
        for cluster in queryset.select_related("tenant").only("pk", "tenant"):
            by_tenant.setdefault(cluster.tenant, []).append(cluster.pk)
        resolved, skipped = [], []
        for tenant, ids in by_tenant.items():
            report = resolve(tenant=tenant, cluster_ids=ids, actor=actor)
            resolved += report.resolved
            skipped += report.skipped
        if resolved:
            links = format_html_join(
                ", ",
                '<a href="{}">undo #{}</a>',
                [(reverse("admin:memory_app_duplicatecluster_undo", args=[c.pk]), c.pk) for c in resolved],
            )
            self.message_user(request, format_html("{} {} cluster(s). {}", done, len(resolved), links))
        for cluster_id, why in skipped:
            self.message_user(request, f"Cluster #{cluster_id} skipped: {why}", messages.WARNING)
