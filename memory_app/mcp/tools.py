"""The MCP tools: each one is a REST operation, described for an LLM.

A tool's input schema is its operation's request schema from the OpenAPI document (body fields,
path and query parameters side by side), its output schema the operation's success response, and
a call runs the operation's view in process (`dispatch.call_operation`): one definition of every
field, limit, default and error message, whichever door an agent comes through.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

import mcp_types as types
from drf_spectacular.generators import SchemaGenerator

from memory_app.api.errors import error_body
from memory_app.api.schema import drop_keys, inline_refs, to_json_schema
from memory_app.mcp.dispatch import Caller, OperationResult, call_operation

API = "/api/v1"
MAX_ID = 2**63 - 1
# OpenAPI-only keys an MCP client has no use for (and that make the schemas longer for the LLM).
NOISE = frozenset({"readOnly", "writeOnly", "example", "examples"})
# The fields a summarized nested object (see `summarize_listed`) still types: what an agent acts on,
# the id (for get_memory, update_memory, memory_feedback) and the text.
KEY_FIELDS = ("id", "text")


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

    def operation(self) -> dict[str, Any]:
        return openapi_document()["paths"][self.path][self.method.lower()]

    def parameters(self, where: str) -> list[dict[str, Any]]:
        return [p for p in self.operation().get("parameters", []) if p["in"] == where]

    def input_schema(self) -> dict[str, Any]:
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
        schema = {"type": "object", "properties": properties, "required": required}
        return drop_keys(to_json_schema(schema), NOISE)

    def output_schema(self) -> dict[str, Any] | None:
        responses = self.operation()["responses"]
        ok = next((responses[s] for s in ("200", "201") if s in responses), None)
        if not ok or "content" not in ok:
            return None
        components = openapi_document()["components"]["schemas"]
        schema = summarize_listed(ok["content"]["application/json"]["schema"], components)
        if schema.get("type") != "object":
            schema = {"type": "object", "properties": {"results": schema}}
        return drop_keys(to_json_schema(schema, strict=True), NOISE)

    def tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema(),
            output_schema=self.output_schema(),
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                destructive_hint=self.destructive,
                idempotent_hint=self.read_only,
                open_world_hint=False,
            ),
        )

    def call(self, caller: Caller, arguments: dict[str, Any]) -> types.CallToolResult:
        """Sync: run it in a worker thread."""
        args = dict(arguments)
        path_args: dict[str, Any] = {}
        bad: dict[str, list[str]] = {}
        for param in self.parameters("path"):
            name = param["name"]
            value = args.pop(name, None)
            if value is None or value == "":
                bad[name] = ["This field is required."]
            elif param["schema"].get("type") == "integer":
                # ids are bigint primary keys: anything else names no object (the REST URL would not match)
                if isinstance(value, bool) or not str(value).isdigit():
                    bad[name] = ["A valid integer is required."]
                elif not 0 < int(value) <= MAX_ID:
                    bad[name] = [f"Ensure this value is between 1 and {MAX_ID}."]
                else:
                    path_args[name] = int(value)
            else:
                path_args[name] = str(value)
        if self.body_key and self.body_key not in args:
            bad[self.body_key] = ["This field is required."]
        if bad:
            return error_result(OperationResult(400, error_body("invalid", "Invalid input.", bad)))
        query_names = {p["name"] for p in self.parameters("query")}
        if self.body_key:
            body: Any = args.pop(self.body_key)
            query = args
        elif "requestBody" in self.operation():
            body = {k: v for k, v in args.items() if k not in query_names}
            query = {k: v for k, v in args.items() if k in query_names}
        else:
            body, query = None, args
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
        if isinstance(result.data, dict):
            data, text = result.data, result.text  # the API's own rendering, not encoded a second time
        else:
            data = {"results": result.data}
            text = json.dumps(data)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)


def _ref_name(node: dict[str, Any]) -> str | None:
    ref = node.get("$ref")
    if ref is None and len(node.get("allOf", [])) == 1:  # drf-spectacular's nullable reference
        ref = node["allOf"][0].get("$ref")
    return ref.rsplit("/", 1)[1] if isinstance(ref, str) else None


def _returned_by(component: str) -> str | None:
    for spec in TOOLS:
        responses = spec.operation()["responses"]
        for status in ("200", "201"):
            content = responses.get(status, {}).get("content", {}).get("application/json", {})
            if _ref_name(content.get("schema", {})) == component:
                return spec.name
    return None


def _summary(component: str, components: dict[str, Any]) -> dict[str, Any]:
    fields = components[component]["properties"]
    owner = _returned_by(component)
    where = f"; {owner}'s output schema gives each field's type" if owner else ""
    return {
        "type": "object",
        "description": f"Every field is listed in `required`{where}.",
        "properties": {name: fields[name] for name in KEY_FIELDS if name in fields},
        "required": sorted(fields),
        "additionalProperties": True,
    }


def summarize_listed(node: Any, components: dict[str, Any], *, field_of_item: bool = False) -> Any:
    """`inline_refs`, except that an object nested in each item of a list (the memory in every search
    hit or context fact) is summarized: its field names and its `KEY_FIELDS` with their types.

    Why: the SDK's client checks every tool result against the output schema (jsonschema, on each
    call), and a memory's thirty typed fields in each of ten hits took it several milliseconds per
    search, more than the rest of the MCP layer. The item's own fields stay typed and closed; the
    nested object's full schema is its own tool's output schema (get_memory for a memory)."""
    if isinstance(node, list):
        return [summarize_listed(item, components, field_of_item=field_of_item) for item in node]
    if not isinstance(node, dict):
        return node
    name = _ref_name(node)
    if field_of_item and name is not None and "properties" in components[name]:
        rest = {k: v for k, v in node.items() if k not in ("$ref", "allOf")}
        return {**_summary(name, components), **rest}
    if "$ref" in node:
        target = components[node["$ref"].rsplit("/", 1)[1]]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "items":
            out[key] = _item(value, components)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = summarize_listed(value, components, field_of_item=field_of_item)
        else:
            out[key] = summarize_listed(value, components)
    return out


def _item(node: Any, components: dict[str, Any]) -> Any:
    item = summarize_listed(node, components)
    if isinstance(item, dict) and isinstance(node, dict) and "properties" in item:
        raw = components[node["$ref"].rsplit("/", 1)[1]] if "$ref" in node else node
        item["properties"] = {
            key: summarize_listed(value, components, field_of_item=True)
            for key, value in raw["properties"].items()
        }
    return item


def error_result(result: OperationResult) -> types.CallToolResult:
    """The API's own error body (code, message, fields), as text the model reads and can act on."""
    return types.CallToolResult(
        content=[types.TextContent(text=f"HTTP {result.status} " + json.dumps(result.data))], is_error=True
    )


@cache
def openapi_document() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


SCOPE = (
    "Memories are scoped by user_id (a person), namespace (default 'default'; shared knowledge lives "
    "in a namespace with no user_id), agent_id and session_id. "
)
TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="store_memories",
        title="Store memories",
        description=(
            "Save durable facts worth remembering across conversations (preferences, goals, events, "
            "facts about the user or the world), one short self-contained sentence each, e.g. "
            "'User is allergic to peanuts'. " + SCOPE + "Each memory is deduplicated in its scope: the "
            "outcome says created, duplicate_of (already known), merged_into (a paraphrase), superseded "
            "(a changed value replaced the old one, which stays in history) or queued_for_review. "
            "Errors name the bad field as items[i].field, i the index in `memories`; nothing is stored "
            "when any memory is invalid."
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
            "Find stored memories relevant to a query (hybrid vector + keyword search, near-duplicates "
            "collapsed). Put the user's id in filters.user_id to search their memories; narrow with "
            "kind (episodic: about a user; semantic: knowledge), topics, dates or min_confidence. "
            "A time in the query ('yesterday', 'last week', 'in May') ranks memories of that time "
            "first (query_time 'filter' keeps only them; `now` is the date it is read against). "
            "Each result has the memory (with its id for get_memory, update_memory, memory_feedback), "
            "a display text and a score."
        ),
        method="POST",
        url_name="memory-search",
        path=f"{API}/memories/search",
        read_only=True,
    ),
    ToolSpec(
        name="get_context",
        title="Memory context for a turn",
        description=(
            "Call at the start of a turn: returns `context`, ready-to-paste lines of the facts most "
            "worth knowing for this conversation, packed within max_tokens (the token budget, counted "
            "for `model`). Give the user's latest message as `query`, or the recent `messages`, and "
            "filters.user_id for the user."
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
            "Everything for one turn in one call: the session's recent messages (short-term), the "
            "user's relevant memories (episodic), shared knowledge (semantic) and a recommended tool "
            "sequence (procedural). `formatted` joins them for a prompt; a part that failed is null "
            "and listed in `errors`."
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
            "Call at the end of a turn with the user's message and your reply: appends both to the "
            "session, extracts durable facts about the user into memory (deduplicated), and, with a "
            "tool_sequence and success_score, learns the procedure that answered `query`. A failure of "
            "extraction is a warning, never a lost turn."
        ),
        method="POST",
        url_name="interactions",
        path=f"{API}/interactions",
    ),
    ToolSpec(
        name="get_memory",
        title="Get a memory",
        description=(
            "One memory by id, with its counters, confidence and lineage ids (supersedes: the ids it "
            "replaced; superseded_by: its replacement)."
        ),
        method="GET",
        url_name="memory-detail",
        path=f"{API}/memories/{{memory_id}}",
        read_only=True,
    ),
    ToolSpec(
        name="update_memory",
        title="Correct a memory",
        description=(
            "Change a memory's metadata in place (topics, entities, pinned, confidence, expires_at, ...) "
            "or correct its text: a new text becomes a new memory (new id, returned) that supersedes "
            "the old one, which stays in history and can be restored. Give only the fields to change."
        ),
        method="PATCH",
        url_name="memory-detail",
        path=f"{API}/memories/{{memory_id}}",
    ),
    ToolSpec(
        name="memory_feedback",
        title="Rate a memory",
        description=(
            "Tell the service whether a memory helped (signal 'helpful') or misled (signal 'harmful') "
            "the answer; its confidence moves accordingly and ranking follows."
        ),
        method="POST",
        url_name="memory-feedback",
        path=f"{API}/memories/{{memory_id}}/feedback",
    ),
    ToolSpec(
        name="delete_user_memories",
        title="Forget a user",
        description=(
            "Permanently delete everything stored about one user (episodic, semantic, procedural and "
            "short-term, with their history), e.g. on the user's request. Cannot be undone. Set a "
            "kind to false to keep it."
        ),
        method="DELETE",
        url_name="user-memories",
        path=f"{API}/users/{{user_id}}/memories",
        destructive=True,
    ),
    ToolSpec(
        name="suggest_procedure",
        title="Suggest a tool sequence",
        description=(
            "Before planning tool calls for a request, ask whether a recorded procedure answered a "
            "similar query: returns the tool sequence, how it matched (exact, similar, none), its "
            "confidence and whether it is recommended."
        ),
        method="POST",
        url_name="procedure-suggest",
        path=f"{API}/procedures/suggest",
        read_only=True,
    ),
)
BY_NAME = {spec.name: spec for spec in TOOLS}


@cache
def tool_definitions() -> tuple[types.Tool, ...]:
    """Built once per process from the OpenAPI document (generating it takes a second or two)."""
    return tuple(spec.tool() for spec in TOOLS)
