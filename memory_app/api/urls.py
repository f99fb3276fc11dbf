from django.urls import path

from memory_app.api.views.health import HealthApi
from memory_app.api.views.memories import MemoryCollectionApi
from memory_app.api.views.procedures import ProcedureRecordApi, ProcedureSuggestApi
from memory_app.api.views.search import ContextApi, MemorySearchApi
from memory_app.api.views.sessions import SessionDetailApi, SessionMessagesApi
from memory_app.api.views.users import UserMemoriesApi

urlpatterns = [
    path("health", HealthApi.as_view(), name="health"),
    path("memories", MemoryCollectionApi.as_view(), name="memory-collection"),
    # retrieval (issue 5)
    path("memories/search", MemorySearchApi.as_view(), name="memory-search"),
    path("context", ContextApi.as_view(), name="context"),
    # kinds (issue 6)
    path("sessions/<str:session_id>/messages", SessionMessagesApi.as_view(), name="session-messages"),
    path("sessions/<str:session_id>", SessionDetailApi.as_view(), name="session-detail"),
    path("procedures/record", ProcedureRecordApi.as_view(), name="procedure-record"),
    path("procedures/suggest", ProcedureSuggestApi.as_view(), name="procedure-suggest"),
    path("users/<str:user_id>/memories", UserMemoriesApi.as_view(), name="user-memories"),
]
