"""Typed shapes of the API's JSON (OpenAPI components in comments); dates are ISO 8601 strings.

The suite compares every model here with its schema component, field by field, so a change on
either side that the other does not follow fails a test.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

Kind = Literal["episodic", "semantic"]
Status = Literal["active", "superseded", "deleted"]
Outcome = Literal["created", "merged_into", "superseded", "duplicate_of", "queued_for_review"]
Mode = Literal["hybrid", "vector", "fulltext"]
Role = Literal["user", "assistant", "system", "tool"]
Extraction = Literal["auto", "llm", "rules"]


class Memory(TypedDict):  # MemoryOutput
    id: int
    kind: Kind
    user_id: str
    agent_id: str
    namespace: str
    session_id: str
    text: str
    topics: list[str]
    entities: list[str]
    event_type: str
    event_date: str | None
    context: str
    category: str
    fact_type: str
    source: str
    metadata: dict[str, Any]
    status: Status
    pinned: bool
    access_count: int
    helpful_count: int
    harmful_count: int
    confidence: float
    superseded_by: int | None
    supersedes: list[int]  # the ids this memory directly replaced
    embedding_model: str
    created_at: str
    updated_at: str
    last_accessed_at: str | None
    expires_at: str | None


class MemoryPage(TypedDict):  # MemoryPage
    next: str | None
    previous: str | None
    results: list[Memory]


class StoreOutcome(TypedDict):  # StoreOutcome
    outcome: Outcome
    memory_id: int
    related_ids: list[int]
    change_id: int | None
    cluster_id: int | None
    relation: str | None
    confidence: float | None
    embedding_pending: bool  # stored without a vector (provider down); filled in shortly
    warnings: list[str]
    memory: Memory | None


class SearchHit(TypedDict):  # SearchHit
    memory: Memory
    text: str
    score: float
    member_ids: list[int]
    cluster: int | None
    vector_score: float | None
    lexical_score: float | None


class TimeWindow(TypedDict):  # TimeWindow
    start: str
    end: str  # exclusive
    expression: str  # the query's words that named it
    period: Literal["day", "week", "month", "season", "year"]
    applied: Literal["boost", "filter"]


class SearchResult(TypedDict):  # MemorySearchOutput
    mode: str
    count: int
    results: list[SearchHit]
    degraded: list[str]  # what the search could not do (e.g. the query embedding failed)
    time_window: TimeWindow | None  # the window of event dates a time in the query named


class ContextFact(TypedDict):  # ContextFact
    memory: Memory
    text: str
    score: float
    similarity: float | None
    member_ids: list[int]


class Context(TypedDict):  # ContextOutput
    context: str
    tokens: int
    query: str
    facts: list[ContextFact]
    degraded: list[str]
    time_window: TimeWindow | None


class PartError(TypedDict):  # PartError
    part: str
    code: str
    message: str


class TurnContext(TypedDict):  # ContextAllOutput
    short_term: dict[str, Any] | None
    episodic: dict[str, Any] | None
    semantic: dict[str, Any] | None
    procedural: dict[str, Any] | None
    counts: dict[str, int]
    formatted: str
    errors: list[PartError]
    max_tokens: int  # the budget applied
    tokens: dict[str, int]  # tokens of each part and of `formatted` ("total")
    time_window: TimeWindow | None  # applied to the episodic part


class Session(TypedDict):  # SessionOutput
    session_id: str
    user_id: str
    agent_id: str
    summary: str
    trimmed_count: int
    token_count: int
    context_window_tokens: int | None  # the session's own window (None: the profile's or the setting's)
    created_at: str
    updated_at: str


class Message(TypedDict):  # MessageOutput
    position: int
    role: Role
    speaker: str
    content: str
    message_id: str
    timestamp: str
    token_count: int
    created_at: str


class SessionAppend(TypedDict):  # SessionAppendOutput
    session: Session
    appended: list[Message]
    trimmed_now: int
    summarized: bool
    summary_method: Literal["llm", "extractive"] | None


class SessionDetail(TypedDict):  # SessionGetOutput
    session: Session
    messages: list[Message]


class Deleted(TypedDict):  # SessionDeleteOutput
    deleted: dict[str, int]


class UserDeleted(TypedDict):  # UserMemoriesDeleteOutput
    user_id: str
    deleted: dict[str, int]


class Procedure(TypedDict):  # ProcedureOutput
    id: int
    user_id: str
    pattern: str
    tool_sequence: Any
    execution_count: int
    avg_execution_time_ms: float
    avg_success_score: float
    confidence: float
    created_at: str
    last_used_at: str | None


class ProcedureSuggestion(TypedDict):  # ProcedureSuggestOutput
    match: Literal["exact", "similar", "none"]
    distance: float | None
    confidence: float
    recommended: bool
    procedure: Procedure | None


class StoredMemory(TypedDict):  # StoredMemory
    text: str
    kind: str
    event_type: str
    outcome: str
    memory_id: int
    embedding_pending: bool
    user_id: str  # the user the memory was stored under
    about: str  # the speaker the memory is about
    event_date: str | None
    source_message_ids: list[str]


class Interaction(TypedDict):  # InteractionOutput
    session: Session
    trimmed_now: int
    extraction_method: str | None
    memories: list[StoredMemory]
    procedure: Procedure | None
    warnings: list[str]


class InteractionBatch(TypedDict):  # InteractionBatchOutput
    results: list[Interaction]


class LineageMemory(TypedDict):  # LineageMemory
    id: int
    text: str
    status: str
    created_at: str
    superseded_by: int | None


class LineageChange(TypedDict):  # LineageChange
    id: int
    operation: str
    relation: str
    actor: str
    confidence: float | None
    reason: str
    created_at: str
    undone_at: str | None


class LineageSuccessor(TypedDict):  # LineageSuccessor
    memory: LineageMemory
    change: LineageChange | None


class Lineage(TypedDict):  # LineageOutput
    memory: LineageMemory
    derived_from: list[dict[str, Any]]
    superseded_by: list[LineageSuccessor]


class ChangeUndo(TypedDict):  # ChangeUndoOutput
    id: int
    operation: str
    relation: str
    result_id: int
    source_ids: list[int]
    undone_at: str


class Stats(TypedDict):  # StatsOutput
    scope: dict[str, Any]
    memories: dict[str, Any]
    knowledge_base: dict[str, Any]
    procedural: dict[str, Any]
    short_term: dict[str, Any]
    review_backlog: int


class EmbeddingModelStats(TypedDict):  # EmbeddingModelStats
    model: str
    exact_hits: int
    normalized_hits: int
    near_hits: int
    misses: int
    provider_calls: int
    tokens_embedded: int
    tokens_avoided: int
    lookups: int
    hit_rate: float
    estimated_cost_saved: float
    price_per_1k_tokens: float
    cache_entries: int
    updated_at: str | None


class EmbeddingStats(TypedDict):  # EmbeddingStatsOutput
    models: list[EmbeddingModelStats]


class Health(TypedDict):  # HealthOutput (liveness: the process answers, no detail)
    status: str


class Readiness(TypedDict):  # ReadinessOutput (an API key or a staff login)
    status: str
    database: dict[str, Any]
    broker: dict[str, Any]
    embedding: dict[str, Any]


class ErrorDetail(TypedDict):  # ErrorDetail
    code: str
    message: str
    fields: dict[str, Any]


# model → schema component: what the suite checks field by field
class AgentProfile(TypedDict):  # AgentProfileOutput
    agent_id: str
    name: str
    config: Any
    created_at: str
    updated_at: str


class AgentProfilePage(TypedDict):  # AgentProfilePage
    next: str | None
    previous: str | None
    results: list[AgentProfile]


class ImportReport(TypedDict):  # ImportOutput
    applied: bool
    version: int
    imported: dict[str, int]
    skipped: dict[str, int]


COMPONENTS: dict[type, str] = {
    Memory: "MemoryOutput",
    MemoryPage: "MemoryPage",
    StoreOutcome: "StoreOutcome",
    SearchHit: "SearchHit",
    TimeWindow: "TimeWindow",
    SearchResult: "MemorySearchOutput",
    ContextFact: "ContextFact",
    Context: "ContextOutput",
    PartError: "PartError",
    TurnContext: "ContextAllOutput",
    Session: "SessionOutput",
    Message: "MessageOutput",
    SessionAppend: "SessionAppendOutput",
    SessionDetail: "SessionGetOutput",
    Deleted: "SessionDeleteOutput",
    UserDeleted: "UserMemoriesDeleteOutput",
    Procedure: "ProcedureOutput",
    ProcedureSuggestion: "ProcedureSuggestOutput",
    StoredMemory: "StoredMemory",
    Interaction: "InteractionOutput",
    InteractionBatch: "InteractionBatchOutput",
    LineageMemory: "LineageMemory",
    LineageChange: "LineageChange",
    LineageSuccessor: "LineageSuccessor",
    Lineage: "LineageOutput",
    ChangeUndo: "ChangeUndoOutput",
    Stats: "StatsOutput",
    EmbeddingModelStats: "EmbeddingModelStats",
    EmbeddingStats: "EmbeddingStatsOutput",
    Health: "HealthOutput",
    Readiness: "ReadinessOutput",
    ErrorDetail: "ErrorDetail",
    AgentProfile: "AgentProfileOutput",
    AgentProfilePage: "AgentProfilePage",
    ImportReport: "ImportOutput",
}
