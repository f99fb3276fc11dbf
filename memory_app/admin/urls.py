"""Admin pages that belong to no single model (included before admin.site.urls in project/urls)."""

from django.contrib import admin
from django.urls import path

from memory_app.admin.dashboard.views import dashboard_view

urlpatterns = [
    path("memory-dashboard/", admin.site.admin_view(dashboard_view), name="memory_dashboard"),
]
