from django.urls import path

from memory_app.api.views.health import HealthApi
from memory_app.api.views.memories import MemoryCollectionApi

urlpatterns = [
    path("health", HealthApi.as_view(), name="health"),
    path("memories", MemoryCollectionApi.as_view(), name="memory-collection"),
]
