"""The lineage tree of a memory and the undo of one change (with a confirmation page)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from memory_app.admin.mixin_base import AdminMixinBase
from memory_app.errors import ApplicationError
from memory_app.models import DuplicateCluster, Memory, MemoryChange
from memory_app.selectors.lineage.tree import memory_lineage_tree
from memory_app.services.actors import Actor
from memory_app.services.review.clusters import change_undo


class MemoryLineageViews(AdminMixinBase):
    """Mixed into the memory ModelAdmins."""

    admin_site: Any
    model: Any

    def lineage_view(self, request: HttpRequest, memory_id: int) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        row = Memory.objects.select_related("tenant").only("pk", "tenant").filter(pk=memory_id).first()
        if row is None:
            raise Http404(f"Memory {memory_id} not found")
        lineage = memory_lineage_tree(tenant=row.tenant, memory_id=memory_id)
        can_undo = request.user.has_perm("memory_app.change_memorychange")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Lineage of memory #{memory_id}",
            "lineage": lineage,
            "memory": lineage.memory,
            "can_undo": can_undo,
            "here": request.get_full_path(),
        }
        return TemplateResponse(request, "admin/memory_app/memory/lineage.html", context)


class ChangeUndoViews(AdminMixinBase):
    """Mixed into MemoryChangeAdmin."""

    admin_site: Any
    model: Any

    def undo_view(self, request: HttpRequest, change_id: int) -> HttpResponse:
        """GET: what will be undone, with a confirm button. POST: undo, then back to `next`."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        change = MemoryChange.objects.select_related("tenant").filter(pk=change_id).first()
        if change is None:
            raise Http404(f"Change {change_id} not found")
        back = request.POST.get("next") or request.GET.get("next") or ""
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            back = ""
        back = back or reverse("admin:memory_app_memory_lineage", args=[change.result_id])
        if request.method == "POST":
            try:
                reopened = change_undo(
                    tenant=change.tenant, change_id=change.pk, actor=Actor.staff(request.user)
                )
            except ApplicationError as exc:
                messages.error(request, exc.message)
                return HttpResponseRedirect(back)
            extra = "".join(f" Cluster #{c.pk} is pending again." for c in reopened)
            messages.success(request, f"Change #{change.pk} undone.{extra}")
            return HttpResponseRedirect(back)
        clusters = list(DuplicateCluster.objects.filter(changes=change).exclude(status="pending"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Undo change #{change.pk}?",
            "change": change,
            "sources": list(change.sources.values_list("memory_id", flat=True)),
            "clusters": clusters,
            "next": back,
        }
        return TemplateResponse(request, "admin/memory_app/memorychange/undo.html", context)
