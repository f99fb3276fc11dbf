"""A tool's result as an agent reads it: each memory as its id, text, score, dates and outcome,
not the API's full record (~25 fields, ~700 characters a memory). The full record is one call away:
the get_memory tool or the resource memory://memories/{id}.

Pure functions of the REST response (dispatch.OperationResult.data): whatever the operation
returns, every memory record, search hit and store outcome in it is compacted the same way.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

# What an agent acts on or dates a fact by; a field that is empty or null is left out.
MEMORY_FIELDS = ("id", "text", "kind", "user_id", "created_at", "event_date", "expires_at", "status")
# Beside the memory, what a hit or a write outcome adds.
RESULT_FIELDS = ("score", "outcome", "relation", "related_ids", "warnings")
# Default values not worth a token.
_ROUTINE = {"kind": "episodic", "status": "active"}


def _present(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def memory_compact(record: dict[str, Any], keep: tuple[str, ...] = ()) -> dict[str, Any]:
    out = {
        name: record[name]
        for name in (*MEMORY_FIELDS, *keep)
        if name in record and _present(record[name]) and _ROUTINE.get(name) != record[name]
    }
    return out


def _is_memory(node: dict[str, Any]) -> bool:
    return {"id", "text", "kind", "created_at"} <= node.keys()


def _result(node: dict[str, Any]) -> dict[str, Any]:
    """A search hit or context fact ({memory, text, score}) or a write's outcome ({outcome,
    memory_id, memory?}): the memory compacted, with the hit's display text and score or the
    outcome beside it."""
    memory = node.get("memory")
    out = memory_compact(memory) if isinstance(memory, dict) else {}
    if "memory_id" in node and _present(node["memory_id"]):
        out["id"] = node["memory_id"]
    for name in ("text", "event_date"):
        if _present(node.get(name)):
            out[name] = node[name]
    for name in RESULT_FIELDS:
        if _present(node.get(name)):
            value = node[name]
            out[name] = round(value, 3) if isinstance(value, float) else value
    return out


def compact(node: Any) -> Any:
    if isinstance(node, list):
        return [compact(item) for item in node]
    if not isinstance(node, dict):
        return node
    if isinstance(node.get("memory"), dict) or ("memory_id" in node and "outcome" in node):
        return _result(node)
    if _is_memory(node):
        return memory_compact(node)
    return {key: compact(value) for key, value in node.items()}


def page_compact(page: dict[str, Any]) -> dict[str, Any]:
    """A list page: its memories compacted, and the cursor of the next page (for the `cursor`
    argument) instead of URLs."""
    out: dict[str, Any] = {"results": compact(page.get("results", []))}
    following = page.get("next")
    if following:
        out["next_cursor"] = parse_qs(urlsplit(following).query).get("cursor", [""])[0]
    return out
