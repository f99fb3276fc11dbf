"""The MCP tools: each one is a REST operation, described for an agent.

A tool's input schema is its operation's request schema from the OpenAPI document (body fields,
path and query parameters side by side) without the operator's knobs and serializer boilerplate
(schemas.py); a call runs the operation's view in process (`dispatch.call_operation`): one definition
of every field, limit, default and error message, whichever door an agent comes through. Results
are compact (results.py): each memory's id, text, score, dates and outcome; the full record is the
get_memory tool or the resource memory://memories/{id}.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import mcp_types as types
from drf_spectacular.generators import SchemaGenerator

from memory_app.api.errors import error_body
from memory_app.api.schema import inline_refs, to_json_schema
from memory_app.mcp.dispatch import Caller, OperationResult, call_operation
from memory_app.mcp.results import compact, memory_compact, page_compact
from memory_app.mcp.schemas import KNOB_MESSAGE, OPERATOR_KNOBS, SCOPE_FIELDS, tidy, without_knobs

API = "/api/v1"
MAX_ID = 2**63 - 1
# A tool's result from the operation's response body and the tool's arguments.
Shape = Callable[[Any, dict[str, Any]], Any]


def compact_result(data: Any, arguments: dict[str, Any]) -> Any:
    return compact(data)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    method: str
    url_name: str
    path: str  # the OpenAPI path template, for the schemas
    body_key: str | None = None  # this argument is the whole body (a list); the others are query params
    read_only: bool = False
    destructive: bool = False
    shape: Shape = compact_result

    def operation(self) -> dict[str, Any]:
        return openapi_document()["paths"][self.path][self.method.lower()]

    def parameters(self, where: str) -> list[dict[str, Any]]:
        return [p for p in self.operation().get("parameters", []) if p["in"] == where]

    def request_schema(self) -> dict[str, Any]:
        """The operation's whole request (path, query and body fields) as one JSON Schema object."""
        components = openapi_document()["components"]["schemas"]
        properties: dict[str, Any] = {}
        required: list[str] = []
        for param in self.parameters("path") + self.parameters("query"):
            properties[param["name"]] = {**param["schema"], "description": param.get("description", "")}
            if param.get("required"):
                required.append(param["name"])
        body = self.operation().get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None:
            schema = inline_refs(body["schema"], components)
            if self.body_key:
                array = next(s for s in schema.get("oneOf", [schema]) if s.get("type") == "array")
                properties[self.body_key] = {**array, "minItems": 1}
                required.append(self.body_key)
            else:
                properties.update(schema.get("properties", {}))
                required += schema.get("required", [])
        return to_json_schema({"type": "object", "properties": properties, "required": required})

    def hoisted(self) -> dict[str, str]:
        """Scope fields the operation takes only inside `filters`: the tool takes them at the top
        level too (one way to name the user in every tool) and moves them into `filters`."""
        return _hoisted(self)

    def input_schema(self) -> dict[str, Any]:
        schema = self.request_schema()
        nested = schema["properties"].get("filters", {}).get("properties", {})
        for name in self.hoisted():
            schema["properties"][name] = nested[name]
        return tidy(without_knobs(schema))

    def tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema(),
            annotations=types.ToolAnnotations(
                read_only_hint=self.read_only,
                destructive_hint=self.destructive,
                idempotent_hint=self.read_only,
                open_world_hint=False,
            ),
        )

    def _scoped(self, args: dict[str, Any], bad: dict[str, list[str]]) -> None:
        for name, into in self.hoisted().items():
            if name not in args:
                continue
            value = args.pop(name)
            nested = args.get(into)
            nested = dict(nested) if isinstance(nested, dict) else {}
            if name in nested and nested[name] != value:
                bad[name] = [f"Disagrees with {into}.{name}; give one of them."]
            nested[name] = value
            args[into] = nested

    def call(self, caller: Caller, arguments: dict[str, Any]) -> types.CallToolResult:
        """Sync: run it in a worker thread."""
        args = dict(arguments)
        bad: dict[str, list[str]] = {name: [KNOB_MESSAGE] for name in args if name in OPERATOR_KNOBS}
        self._scoped(args, bad)
        path_args = self._path_args(args, bad)
        if self.body_key and self.body_key not in args:
            bad[self.body_key] = ["This field is required."]
        if bad:
            return error_result(OperationResult(400, error_body("invalid", "Invalid input.", bad)))
        body, query = self._body_and_query(args)
        result = call_operation(
            caller=caller,
            method=self.method,
            url_name=self.url_name,
            path_args=path_args,
            query=query,
            body=body,
        )
        if not result.ok:
            return error_result(result)
        data = self.shape(result.data, {**arguments, **path_args})
        if not isinstance(data, dict):
            data = {"results": data}
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(data, separators=(",", ":")))], structured_content=data
        )

    def _path_args(self, args: dict[str, Any], bad: dict[str, list[str]]) -> dict[str, Any]:
        """The URL's arguments, taken out of `args`; a missing or malformed one is noted in `bad`."""
        path_args: dict[str, Any] = {}
        for param in self.parameters("path"):
            name = param["name"]
            value = args.pop(name, None)
            if value is None or value == "":
                bad[name] = ["This field is required."]
            elif param["schema"].get("type") != "integer":
                path_args[name] = str(value)
            elif problem := _id_problem(value):
                bad[name] = [problem]
            else:
                path_args[name] = int(value)
        return path_args

    def _body_and_query(self, args: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """The request body and the query parameters the remaining arguments make."""
        query_names = {p["name"] for p in self.parameters("query")}
        if self.body_key:
            return args.pop(self.body_key), args
        if "requestBody" in self.operation():
            body = {k: v for k, v in args.items() if k not in query_names}
            return body, {k: v for k, v in args.items() if k in query_names}
        return None, args


def _id_problem(value: Any) -> str | None:
    """Why `value` is no id: ids are bigint primary keys, and anything else names no object (the
    REST URL would not match)."""
    if isinstance(value, bool) or not str(value).isdigit():
        return "A valid integer is required."
    if not 0 < int(value) <= MAX_ID:
        return f"Ensure this value is between 1 and {MAX_ID}."
    return None


def error_result(result: OperationResult) -> types.CallToolResult:
    """The API's own error body (code, message, fields), as text the model reads and can act on."""
    return types.CallToolResult(
        content=[types.TextContent(text=f"HTTP {result.status} " + json.dumps(result.data))], is_error=True
    )


@cache
def openapi_document() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


@cache
def _hoisted(spec: ToolSpec) -> dict[str, str]:
    properties = spec.request_schema()["properties"]
    nested = properties.get("filters", {}).get("properties", {})
    return {name: "filters" for name in sorted(SCOPE_FIELDS) if name in nested and name not in properties}


def _updated(data: Any, arguments: dict[str, Any]) -> Any:
    """The corrected memory, compact, with the fields the call changed."""
    return memory_compact(data, keep=tuple(name for name in arguments if name != "memory_id"))


def _rated(data: Any, arguments: dict[str, Any]) -> Any:
    return memory_compact(data, keep=("confidence", "helpful_count", "harmful_count"))


def _deleted(data: Any, arguments: dict[str, Any]) -> Any:
    return {"deleted": arguments["memory_id"]}


def _full(data: Any, arguments: dict[str, Any]) -> Any:
    return data


def _page(data: Any, arguments: dict[str, Any]) -> Any:
    return page_compact(data)


USER = "Name the person with user_id. "
TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_context",
        title="Memory context for a turn",
        description=(
            "Call at the start of a turn with the user's message as `query` (or recent `messages`). "
            "Returns `context`: lines for your prompt, what is worth knowing now, within max_tokens. " + USER
        ),
        method="POST",
        url_name="context",
        path=f"{API}/context",
        read_only=True,
    ),
    ToolSpec(
        name="get_turn_context",
        title="All memory kinds for a turn",
        description=(
            "get_context plus the session's recent messages, shared knowledge and a recommended "
            "tool sequence. Put `formatted` in your prompt. " + USER
        ),
        method="POST",
        url_name="context-all",
        path=f"{API}/context/all",
        read_only=True,
    ),
    ToolSpec(
        name="record_interaction",
        title="Record a conversation turn",
        description=(
            "Call at the end of a turn with the user's message and your reply (or `messages`): "
            "keeps the turn in the session and learns durable facts from it (`memories`). With "
            "query, tool_sequence and success_score it learns which tools worked. " + USER
        ),
        method="POST",
        url_name="interactions",
        path=f"{API}/interactions",
    ),
    ToolSpec(
        name="store_memories",
        title="Store memories",
        description=(
            "Save facts, one short sentence each ('User is allergic to peanuts'), with the user_id "
            "of the person (shared knowledge: kind semantic, no user_id). Each outcome: created, "
            "duplicate_of, merged_into, superseded (old value replaced) or queued_for_review."
        ),
        method="POST",
        url_name="memory-collection",
        path=f"{API}/memories",
        body_key="memories",
    ),
    ToolSpec(
        name="search_memories",
        title="Search memories",
        description=(
            "Memories relevant to a query, best first (id, text, score, dates). Narrow with filters. "
            "A time in the query ('yesterday', 'in May') ranks memories of that time first. " + USER
        ),
        method="POST",
        url_name="memory-search",
        path=f"{API}/memories/search",
        read_only=True,
    ),
    ToolSpec(
        name="list_memories",
        title="List memories",
        description=("Memories newest first, a page at a time (pass next_cursor back as `cursor`). " + USER),
        method="GET",
        url_name="memory-collection",
        path=f"{API}/memories",
        read_only=True,
        shape=_page,
    ),
    ToolSpec(
        name="get_memory",
        title="Get a memory",
        description=("One memory's full record by id: every field, counters and history."),
        method="GET",
        url_name="memory-detail",
        path=f"{API}/memories/{{memory_id}}",
        read_only=True,
        shape=_full,
    ),
    ToolSpec(
        name="update_memory",
        title="Correct a memory",
        description=(
            "Correct a memory: its id and only the fields to change. A new text gets a new id "
            "(returned); the old version stays in history."
        ),
        method="PATCH",
        url_name="memory-detail",
        path=f"{API}/memories/{{memory_id}}",
        shape=_updated,
    ),
    ToolSpec(
        name="delete_memory",
        title="Delete a memory",
        description=("Delete one memory by id: it leaves searches and context; its history is kept."),
        method="DELETE",
        url_name="memory-detail",
        path=f"{API}/memories/{{memory_id}}",
        destructive=True,
        shape=_deleted,
    ),
    ToolSpec(
        name="memory_feedback",
        title="Rate a memory",
        description=("Say whether a memory helped (signal 'helpful') or misled ('harmful') your answer."),
        method="POST",
        url_name="memory-feedback",
        path=f"{API}/memories/{{memory_id}}/feedback",
        shape=_rated,
    ),
    ToolSpec(
        name="delete_user_memories",
        title="Forget a user",
        description=(
            "Permanently delete everything about one user (they asked to be forgotten). Cannot be "
            "undone. Set a kind to false to keep it."
        ),
        method="DELETE",
        url_name="user-memories",
        path=f"{API}/users/{{user_id}}/memories",
        destructive=True,
        shape=_full,
    ),
    ToolSpec(
        name="suggest_procedure",
        title="Suggest a tool sequence",
        description=(
            "Before planning tool calls: a recorded tool sequence that answered a similar request, "
            "and whether it is recommended."
        ),
        method="POST",
        url_name="procedure-suggest",
        path=f"{API}/procedures/suggest",
        read_only=True,
        shape=_full,
    ),
)
BY_NAME = {spec.name: spec for spec in TOOLS}


@cache
def tool_definitions() -> tuple[types.Tool, ...]:
    """Built once per process from the OpenAPI document (generating it takes a second or two)."""
    return tuple(spec.tool() for spec in TOOLS)
