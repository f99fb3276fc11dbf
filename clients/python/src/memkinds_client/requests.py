"""Typed request bodies and options (OpenAPI request components in comments). Leave a key out for
the server's default; the suite checks every key against the schema."""

from typing import Any, Literal, Required, TypedDict

from memkinds_client.models import Extraction, Kind, Mode, Role


class MemoryFields(TypedDict, total=False):  # the fields a memory is stored and edited with
    topics: list[str]
    entities: list[str]
    event_type: str
    event_date: str | None
    context: str
    category: str
    fact_type: str
    source: str
    metadata: dict[str, Any]
    confidence: float
    pinned: bool
    expires_at: str | None


class MemoryInput(MemoryFields, total=False):  # MemoryStoreInputRequest
    text: Required[str]
    kind: Kind
    user_id: str
    agent_id: str
    namespace: str
    session_id: str


class StoreOptions(TypedDict, total=False):  # query parameters of POST /memories
    deduplicate: bool | None
    candidate_radius: float
    judge: Literal["offline", "llm"]


# eventual: a read replica may answer; strong: the primary, which has every acknowledged write
Consistency = Literal["eventual", "strong"]
QueryTime = Literal["boost", "filter", "off"]


class ListFilters(TypedDict, total=False):  # query parameters of GET /memories
    consistency: Consistency
    user_id: str
    agent_id: str
    namespace: str
    session_id: str
    kind: Kind
    status: Literal["active", "superseded", "deleted", "any"]
    topic: str
    entity: str
    created_after: str
    created_before: str
    fields: str  # comma-separated memory fields to keep ("id" always); all when left out


class MemoryChanges(MemoryFields, total=False):  # PatchedMemoryUpdateInputRequest
    text: str


class SearchFilters(TypedDict, total=False):  # SearchFilterRequest
    user_id: str
    agent_id: str
    namespace: str
    session_id: str
    kind: Kind
    topics_any: list[str]
    topics_all: list[str]
    entities: list[str]
    created_after: str
    created_before: str
    event_after: str
    event_before: str
    min_confidence: float
    include_superseded: bool


class SearchOptions(TypedDict, total=False):  # MemorySearchInputRequest, without query
    all_users: bool
    limit: int
    mode: Mode
    filters: SearchFilters
    deduplicate: bool | None
    dedup_threshold: float
    dedup_use_llm: bool | None
    clustering: bool | None
    mmr: bool | None
    mmr_lambda: float
    half_life_days: float
    now: str  # ISO 8601: what "yesterday" in the query is read against (default: the server's time)
    query_time: QueryTime
    fields: list[str]  # the memory fields each result keeps ("id" always); all when left out


class ChatMessage(TypedDict):  # ContextMessageRequest
    role: Role
    content: str


class ContextOptions(TypedDict, total=False):  # ContextInputRequest
    all_users: bool
    query: str
    messages: list[ChatMessage]
    user_turns: int
    max_tokens: int
    model: str
    filters: SearchFilters
    now: str
    query_time: QueryTime


class TurnContextOptions(TypedDict, total=False):  # ContextAllInputRequest, without query
    user_id: str
    session_id: str
    agent_id: str
    namespace: str
    include_short_term: bool
    include_episodic: bool
    include_semantic: bool
    include_procedural: bool
    short_term_limit: int
    episodic_limit: int
    semantic_limit: int
    max_tokens: int
    now: str
    query_time: QueryTime


class ConversationMessage(TypedDict, total=False):  # ChatMessageRequest
    role: Required[Role]
    content: Required[str]
    speaker: str
    timestamp: str | None
    message_id: str


class InteractionOptions(TypedDict, total=False):  # InteractionInputRequest, without session_id, user_message
    messages: list[ConversationMessage]
    assistant_message: str
    speakers: dict[str, str]
    user_id: str
    agent_id: str
    namespace: str
    extract: bool
    extraction: Extraction | None
    query: str
    tool_sequence: list[str]
    execution_time_ms: float
    success_score: float


class InteractionInput(InteractionOptions, total=False):  # InteractionInputRequest (one of a batch)
    session_id: Required[str]
    user_message: str


class SessionMessage(TypedDict, total=False):  # MessageRequest
    role: Required[Role]
    content: Required[str]
    created_at: str
    speaker: str
    message_id: str


class AppendOptions(TypedDict, total=False):  # SessionAppendInputRequest, without messages, role, content
    user_id: str
    agent_id: str
    context_window_tokens: int


class SuggestOptions(TypedDict, total=False):  # ProcedureSuggestInputRequest, without query
    user_id: str
    max_distance: float


class ForgetOptions(TypedDict, total=False):  # query parameters of DELETE /users/{user_id}/memories
    episodic: bool
    semantic: bool
    procedural: bool
    short_term: bool


class StatsFilters(TypedDict, total=False):  # query parameters of GET /stats
    consistency: Consistency
    user_id: str
    session_id: str
