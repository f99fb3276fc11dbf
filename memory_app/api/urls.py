from django.urls import path

from memory_app.api.views.changes import ChangeUndoApi
from memory_app.api.views.health import HealthApi
from memory_app.api.views.memories import MemoryCollectionApi
from memory_app.api.views.memory_detail import MemoryDetailApi, MemoryFeedbackApi, MemoryLineageApi

urlpatterns = [
    path("health", HealthApi.as_view(), name="health"),
    path("memories", MemoryCollectionApi.as_view(), name="memory-collection"),
    path("memories/<int:memory_id>", MemoryDetailApi.as_view(), name="memory-detail"),
    path("memories/<int:memory_id>/feedback", MemoryFeedbackApi.as_view(), name="memory-feedback"),
    path("memories/<int:memory_id>/lineage", MemoryLineageApi.as_view(), name="memory-lineage"),
    path("merges/<int:change_id>/undo", ChangeUndoApi.as_view(), name="change-undo"),
]
