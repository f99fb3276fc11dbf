"""Every API operation once, as a request description; the sync and async clients only send them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from json import dumps
from typing import Any
from urllib.parse import quote

# operation → (method, path template); the suite checks this against the schema's operations
OPERATIONS: dict[str, tuple[str, str]] = {
    "health": ("GET", "/api/v1/health"),
    "readiness": ("GET", "/api/v1/health/ready"),
    "store": ("POST", "/api/v1/memories"),
    "list_memories": ("GET", "/api/v1/memories"),
    "get_memory": ("GET", "/api/v1/memories/{memory_id}"),
    "update_memory": ("PATCH", "/api/v1/memories/{memory_id}"),
    "delete_memory": ("DELETE", "/api/v1/memories/{memory_id}"),
    "feedback": ("POST", "/api/v1/memories/{memory_id}/feedback"),
    "lineage": ("GET", "/api/v1/memories/{memory_id}/lineage"),
    "undo_change": ("POST", "/api/v1/merges/{change_id}/undo"),
    "search": ("POST", "/api/v1/memories/search"),
    "context": ("POST", "/api/v1/context"),
    "turn_context": ("POST", "/api/v1/context/all"),
    "record_interaction": ("POST", "/api/v1/interactions"),
    "record_interactions": ("POST", "/api/v1/interactions/batch"),
    "append_messages": ("POST", "/api/v1/sessions/{session_id}/messages"),
    "get_session": ("GET", "/api/v1/sessions/{session_id}"),
    "delete_session": ("DELETE", "/api/v1/sessions/{session_id}"),
    "record_procedure": ("POST", "/api/v1/procedures/record"),
    "suggest_procedure": ("POST", "/api/v1/procedures/suggest"),
    "forget_user": ("DELETE", "/api/v1/users/{user_id}/memories"),
    "stats": ("GET", "/api/v1/stats"),
    "embedding_stats": ("GET", "/api/v1/stats/embeddings"),
    "list_agent_profiles": ("GET", "/api/v1/agent-profiles"),
    "create_agent_profile": ("POST", "/api/v1/agent-profiles"),
    "get_agent_profile": ("GET", "/api/v1/agent-profiles/{agent_id}"),
    "update_agent_profile": ("PATCH", "/api/v1/agent-profiles/{agent_id}"),
    "delete_agent_profile": ("DELETE", "/api/v1/agent-profiles/{agent_id}"),
    "export_tenant": ("GET", "/api/v1/export"),
    "import_tenant": ("POST", "/api/v1/import"),
}
JSONL = "application/x-ndjson"


@dataclass(frozen=True)
class Call:
    operation: str
    method: str
    path: str
    params: dict[str, str]
    json: Any = None
    content: bytes | None = None  # a JSONL body (the import), sent instead of `json`


def _param(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def call(
    operation: str,
    *,
    path: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    json: Any = None,
    content: bytes | None = None,
) -> Call:
    method, template = OPERATIONS[operation]
    url = template.format(**{key: quote(str(value), safe="") for key, value in (path or {}).items()})
    query = {key: _param(value) for key, value in (params or {}).items() if value is not None}
    return Call(operation, method, url, query, json, content)


def json_lines(records: bytes | Iterable[Mapping[str, Any]]) -> bytes:
    """An export as the import takes it: the bytes as they are, or records one per line."""
    if isinstance(records, bytes):
        return records
    return "".join(dumps(dict(r), ensure_ascii=False) + "\n" for r in records).encode()


def body(required: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body: the required fields and the options given (None means "the server's default")."""
    return {**required, **{key: value for key, value in options.items() if value is not None}}


def scope_fields(user_id: str | None, agent_id: str | None, session_id: str | None) -> dict[str, str]:
    """The scope given, for the top level of a body."""
    given = {"user_id": user_id, "agent_id": agent_id, "session_id": session_id}
    return {key: value for key, value in given.items() if value is not None}


def procedure_run(
    query: str,
    tool_sequence: Sequence[str],
    execution_time_ms: float,
    success_score: float,
    user_id: str | None,
) -> Call:
    required = {
        "query": query,
        "tool_sequence": list(tool_sequence),
        "execution_time_ms": execution_time_ms,
        "success_score": success_score,
    }
    return call("record_procedure", json=body(required, {"user_id": user_id}))
