from django.urls import path

from memory_app.api.views.agent_profiles import AgentProfileCollectionApi, AgentProfileDetailApi
from memory_app.api.views.changes import ChangeUndoApi
from memory_app.api.views.context import ContextAllApi, ContextApi
from memory_app.api.views.health import HealthApi, ReadinessApi
from memory_app.api.views.interactions import InteractionsApi, InteractionsBatchApi
from memory_app.api.views.memories import MemoryCollectionApi
from memory_app.api.views.memory_detail import MemoryDetailApi, MemoryFeedbackApi, MemoryLineageApi
from memory_app.api.views.procedures import ProcedureRecordApi, ProcedureSuggestApi
from memory_app.api.views.search import MemorySearchApi
from memory_app.api.views.sessions import SessionDetailApi, SessionMessagesApi
from memory_app.api.views.stats import EmbeddingStatsApi, StatsApi
from memory_app.api.views.transfer import ExportApi, ImportApi
from memory_app.api.views.users import UserMemoriesApi

urlpatterns = [
    path("health", HealthApi.as_view(), name="health"),
    path("health/ready", ReadinessApi.as_view(), name="health-ready"),
    path("memories", MemoryCollectionApi.as_view(), name="memory-collection"),
    # retrieval: search, context injection, load-time dedup
    path("memories/search", MemorySearchApi.as_view(), name="memory-search"),
    path("context", ContextApi.as_view(), name="context"),
    path("memories/<int:memory_id>", MemoryDetailApi.as_view(), name="memory-detail"),
    path("memories/<int:memory_id>/feedback", MemoryFeedbackApi.as_view(), name="memory-feedback"),
    path("memories/<int:memory_id>/lineage", MemoryLineageApi.as_view(), name="memory-lineage"),
    path("merges/<int:change_id>/undo", ChangeUndoApi.as_view(), name="change-undo"),
    # kinds: sessions, procedures, knowledge, interactions
    path("sessions/<str:session_id>/messages", SessionMessagesApi.as_view(), name="session-messages"),
    path("sessions/<str:session_id>", SessionDetailApi.as_view(), name="session-detail"),
    path("procedures/record", ProcedureRecordApi.as_view(), name="procedure-record"),
    path("procedures/suggest", ProcedureSuggestApi.as_view(), name="procedure-suggest"),
    path("users/<str:user_id>/memories", UserMemoriesApi.as_view(), name="user-memories"),
    path("context/all", ContextAllApi.as_view(), name="context-all"),
    path("interactions", InteractionsApi.as_view(), name="interactions"),
    path("interactions/batch", InteractionsBatchApi.as_view(), name="interactions-batch"),
    path("agent-profiles", AgentProfileCollectionApi.as_view(), name="agent-profiles"),
    path("agent-profiles/<str:agent_id>", AgentProfileDetailApi.as_view(), name="agent-profile-detail"),
    path("export", ExportApi.as_view(), name="tenant-export"),
    path("import", ImportApi.as_view(), name="tenant-import"),
    path("stats", StatsApi.as_view(), name="stats"),
    # embedding cache statistics
    path("stats/embeddings", EmbeddingStatsApi.as_view(), name="stats-embeddings"),
]
