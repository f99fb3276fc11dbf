from memory_app.models.cache import EmbeddingCacheEntry, EmbeddingCacheStats
from memory_app.models.jobs import ActiveEmbeddingModel, MaintenanceJob, ReindexVector
from memory_app.models.lineage import MemoryChange, MemoryChangeSource
from memory_app.models.memory import EpisodicMemory, Memory, SemanticMemory
from memory_app.models.procedural import Procedure
from memory_app.models.review import ClusterMember, DuplicateCluster, KeptApartPair
from memory_app.models.search import SearchScopeIndex
from memory_app.models.shortterm import ConversationSession, SessionMessage
from memory_app.models.tenancy import AgentProfile, ApiKey, Tenant
from memory_app.models.tokens import MemoryTokens

__all__ = [
    "ActiveEmbeddingModel",
    "AgentProfile",
    "ApiKey",
    "ClusterMember",
    "ConversationSession",
    "DuplicateCluster",
    "EmbeddingCacheEntry",
    "EmbeddingCacheStats",
    "EpisodicMemory",
    "KeptApartPair",
    "MaintenanceJob",
    "Memory",
    "MemoryChange",
    "MemoryChangeSource",
    "MemoryTokens",
    "Procedure",
    "ReindexVector",
    "SearchScopeIndex",
    "SemanticMemory",
    "SessionMessage",
    "Tenant",
]
