"""The cluster page and its actions (merge, keep apart, split, mark as update, undo).

Every POST calls a service from `memory_app.services.review.clusters` with the staff user as actor, then
redirects to the next pending cluster with a message that links to the undo page.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from memory_app.admin.mixin_base import AdminMixinBase
from memory_app.admin.review.diffs import render_segments, word_diff
from memory_app.admin.review.llm import llm_merge_suggestion, llm_suggestion_available
from memory_app.errors import ApplicationError
from memory_app.models import DuplicateCluster
from memory_app.models.review import ClusterStatus
from memory_app.selectors.review import ClusterView, cluster_view, member_text, next_pending_cluster
from memory_app.services.actors import Actor
from memory_app.services.review.clusters import (
    cluster_keep_apart,
    cluster_mark_update,
    cluster_merge,
    cluster_split,
    cluster_undo,
)

SPLIT_GROUPS = ("A", "B", "C", "D")
# The decision that matches the judge's verdict, highlighted so a new reviewer knows where to look.
RECOMMENDED = {"duplicate": "merge", "refine": "merge", "update": "mark_update", "distinct": "keep_apart"}


def _ids(values: list[str]) -> list[int]:
    return [int(v) for v in values if v.strip().isdigit()]


class ClusterReviewViews(AdminMixinBase):
    """Mixed into DuplicateClusterAdmin: the views behind its custom URLs."""

    admin_site: Any
    model: Any

    def _cluster(self, cluster_id: int) -> DuplicateCluster:
        cluster = DuplicateCluster.objects.select_related("tenant").filter(pk=cluster_id).first()
        if cluster is None:
            raise Http404(f"Cluster {cluster_id} not found")
        return cluster

    def _context(self, request: HttpRequest, view: ClusterView, **extra: Any) -> dict[str, Any]:
        diffs = word_diff([m.memory.text for m in view.members])
        members = [(m, render_segments(segs)) for m, segs in zip(view.members, diffs, strict=True)]
        richest = next((m for m in view.members if m.is_richest), None)
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Review cluster #{view.cluster.pk}",
            "view": view,
            "cluster": view.cluster,
            "members": members,
            "pending": view.cluster.status == ClusterStatus.PENDING,
            "can_change": self.has_change_permission(request),
            "llm_available": llm_suggestion_available(),
            "default_survivor": richest.memory.pk if richest else None,
            "split_groups": SPLIT_GROUPS,
            "recommended": RECOMMENDED.get(view.cluster.verdict, ""),
            "suggestion": "",
            "next_id": next_pending_cluster(tenant=None, after=view.cluster),
            **extra,
        }

    def review_view(self, request: HttpRequest, cluster_id: int) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        cluster = self._cluster(cluster_id)
        if request.method == "POST":
            if not self.has_change_permission(request):
                raise PermissionDenied
            return self._act(request, cluster)
        view = cluster_view(tenant=cluster.tenant, cluster_id=cluster.pk)
        return TemplateResponse(
            request, "admin/memory_app/duplicatecluster/review.html", self._context(request, view)
        )

    def _act(self, request: HttpRequest, cluster: DuplicateCluster) -> HttpResponse:
        action = request.POST.get("action", "")
        actor = Actor.staff(request.user)
        tenant = cluster.tenant
        here = reverse("admin:memory_app_duplicatecluster_review", args=[cluster.pk])
        try:
            if action == "suggest":
                return self._suggest(request, cluster)
            if action == "merge":
                ids = _ids(request.POST.getlist("member"))
                text = request.POST.get("text", "").strip()
                survivor = request.POST.get("survivor", "")
                if not text and survivor.isdigit():
                    text = member_text(tenant=tenant, cluster_id=cluster.pk, memory_id=int(survivor)) or ""
                cluster_merge(
                    tenant=tenant,
                    cluster_id=cluster.pk,
                    actor=actor,
                    memory_ids=ids or None,
                    text=text or None,
                )
                done = "merged"
            elif action == "keep_apart":
                cluster_keep_apart(tenant=tenant, cluster_id=cluster.pk, actor=actor)
                done = "kept apart: its members will not be suggested as duplicates again"
            elif action == "mark_update":
                newest = request.POST.get("newest", "")
                cluster_mark_update(
                    tenant=tenant,
                    cluster_id=cluster.pk,
                    actor=actor,
                    newest_id=int(newest) if newest.isdigit() else None,
                )
                done = "marked as an update: the newer value supersedes the older"
            elif action == "split":
                groups: dict[str, list[int]] = {}
                for key, value in request.POST.items():
                    if key.startswith("group_") and value in SPLIT_GROUPS and key[6:].isdigit():
                        groups.setdefault(value, []).append(int(key[6:]))
                cluster_split(
                    tenant=tenant,
                    cluster_id=cluster.pk,
                    groups=[groups[g] for g in sorted(groups)],
                    actor=actor,
                )
                done = f"split into {len(groups)} groups"
            else:
                messages.error(request, "Unknown action.")
                return HttpResponseRedirect(here)
        except ApplicationError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(here)
        undo = reverse("admin:memory_app_duplicatecluster_undo", args=[cluster.pk])
        messages.success(
            request,
            format_html(
                'Cluster #{} {}. <a href="{}">Undo</a> · <a href="{}">view it</a>',
                cluster.pk,
                done,
                undo,
                here,
            ),
        )
        return self._to_next(request, cluster)

    def _to_next(self, request: HttpRequest, cluster: DuplicateCluster) -> HttpResponse:
        next_id = next_pending_cluster(tenant=None, after=cluster)
        if next_id is None:
            messages.info(request, "The review queue is empty: every cluster has been decided.")
            return HttpResponseRedirect(reverse("admin:memory_app_duplicatecluster_changelist"))
        return HttpResponseRedirect(reverse("admin:memory_app_duplicatecluster_review", args=[next_id]))

    def _suggest(self, request: HttpRequest, cluster: DuplicateCluster) -> HttpResponse:
        view = cluster_view(tenant=cluster.tenant, cluster_id=cluster.pk)
        suggestion = llm_merge_suggestion([m.memory.text for m in view.active_members])
        if suggestion is None:
            messages.warning(request, "No LLM suggestion is available right now; choose or edit a text.")
        context = self._context(request, view, suggestion=suggestion or "")
        return TemplateResponse(request, "admin/memory_app/duplicatecluster/review.html", context)

    def undo_view(self, request: HttpRequest, cluster_id: int) -> HttpResponse:
        """GET: what will be undone, with a confirm button. POST: undo and reopen the cluster."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        cluster = self._cluster(cluster_id)
        here = reverse("admin:memory_app_duplicatecluster_review", args=[cluster.pk])
        if request.method == "POST":
            try:
                cluster_undo(tenant=cluster.tenant, cluster_id=cluster.pk, actor=Actor.staff(request.user))
            except ApplicationError as exc:
                messages.error(request, exc.message)
                return HttpResponseRedirect(here)
            messages.success(request, f"Undone: cluster #{cluster.pk} is pending again.")
            return HttpResponseRedirect(here)
        view = cluster_view(tenant=cluster.tenant, cluster_id=cluster.pk)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Undo the decision on cluster #{cluster.pk}?",
            "view": view,
            "cluster": cluster,
            "open_changes": [c for c in view.changes if c.undone_at is None],
        }
        return TemplateResponse(request, "admin/memory_app/duplicatecluster/undo.html", context)
