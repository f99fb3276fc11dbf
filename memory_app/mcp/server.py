"""The MCP server (official SDK, low-level `Server`): tools, a context prompt and resources (a memory,
the tenant's agent profiles, one agent profile).

Why the low-level server and not `MCPServer` (the SDK's decorator API, formerly FastMCP): MCPServer
derives a tool's JSON schema and its validation from a Python signature through pydantic, which would
be a second definition of every field with its own error messages. Here the schemas come from the
OpenAPI document and validation from the API's serializers (tools.py), so both stay the API's own.

Tenant: over stdio the operator starts the server for one tenant (`manage.py mcp_server --tenant`);
over HTTP every request carries an API key: `http.ApiKeyGate` puts its check (`http.KeyCheck`) on
the request the SDK hands to each handler (`ctx.request.state.caller`), and the operation runs it
in its own worker thread before anything else (`dispatch.call_operation`).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any
from urllib.parse import unquote

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from memory_app.api.auth import TenantPrincipal
from memory_app.api.errors import error_body
from memory_app.mcp.dispatch import Caller, OperationResult, call_operation
from memory_app.mcp.tools import BY_NAME, error_result, tool_definitions

INSTRUCTIONS = (
    "Long-term memory for this agent. At the start of a turn call get_context (or get_turn_context) "
    "with the user's message and user_id and use what it returns; at the end call record_interaction "
    "with the user's message and your reply. Store durable facts with store_memories, correct them "
    "with update_memory, rate what helped or misled with memory_feedback."
)
MEMORY_URI = "memory://memories/{memory_id}"
PROFILE_URI = "memory://agent-profiles/{agent_id}"
PROFILES_URI = "memory://agent-profiles"
PROMPT_ARGUMENTS = {
    "message": "the user's message",
    "user_id": "whose memories",
    "max_tokens": "token budget for the memories (default 500)",
}


def _caller(ctx: ServerRequestContext[Any, Any], fixed: TenantPrincipal | None) -> Caller | None:
    if fixed is not None:
        return fixed
    state = getattr(getattr(ctx, "request", None), "state", None)
    return getattr(state, "caller", None)


UNAUTHENTICATED = OperationResult(401, error_body("not_authenticated", "An API key is required."))


def _resource_operation(uri: str) -> tuple[str, dict[str, Any]] | None:
    """The GET operation a resource URI stands for: (URL name, path arguments); None if unknown."""
    if uri == PROFILES_URI:
        return "agent-profiles", {}
    for template, url_name, key in (
        (MEMORY_URI, "memory-detail", "memory_id"),
        (PROFILE_URI, "agent-profile-detail", "agent_id"),
    ):
        prefix = template.split("{", 1)[0]
        rest = unquote(uri[len(prefix) :]) if uri.startswith(prefix) else ""
        if not rest or "/" in rest:
            continue
        if key == "memory_id":
            return (url_name, {key: int(rest)}) if rest.isdigit() else None
        return url_name, {key: rest}
    return None


def build_server(*, principal: TenantPrincipal | None = None) -> Server[Any]:
    """`principal`: the stdio server's tenant; None over HTTP (each request brings its key)."""
    # Built here, at start-up (generating the OpenAPI document takes a second or two), so the
    # handlers below only read the cache and need no worker thread.
    tools = tool_definitions()
    input_schemas = {tool.name: tool.input_schema for tool in tools}

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tools))

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = BY_NAME.get(params.name)
        if spec is None:
            message = f"Unknown tool {params.name!r}; available: {', '.join(BY_NAME)}."
            return error_result(OperationResult(404, error_body("not_found", message)))
        who = _caller(ctx, principal)
        if who is None:
            return error_result(UNAUTHENTICATED)
        return await anyio.to_thread.run_sync(partial(spec.call, who, dict(params.arguments or {})))

    async def list_prompts(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name="memory_context",
                    title="Answer with memory",
                    description="The user's message with the memories worth knowing for it, within a budget.",
                    arguments=[
                        types.PromptArgument(name=name, description=about, required=name == "message")
                        for name, about in PROMPT_ARGUMENTS.items()
                    ],
                )
            ]
        )

    async def get_prompt(
        ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        args = dict(params.arguments or {})
        if params.name != "memory_context" or not args.get("message"):
            raise MCPError(INVALID_PARAMS, "The memory_context prompt needs a `message`.")
        who = _caller(ctx, principal)
        if who is None:
            raise MCPError(INVALID_PARAMS, "An API key is required.")
        body = {
            "query": args["message"],
            "max_tokens": int(args.get("max_tokens") or 500),
            "filters": {"user_id": args.get("user_id", "")},
        }
        result = await anyio.to_thread.run_sync(
            partial(call_operation, caller=who, method="POST", url_name="context", body=body)
        )
        if not result.ok:
            raise MCPError(INVALID_PARAMS, result.data["error"]["message"], result.data)
        context = result.data["context"] or "(nothing relevant stored yet)"
        text = f"What you remember about this user:\n{context}\n\nThe user says:\n{args['message']}"
        return types.GetPromptResult(
            description="the user's message with relevant memories",
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
        )

    async def list_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name="agent-profiles",
                    uri=PROFILES_URI,
                    description="This tenant's agent profiles as JSON (the first page of the list).",
                    mime_type="application/json",
                )
            ]
        )

    async def list_resource_templates(
        ctx: ServerRequestContext[Any, Any], params: Any
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="memory",
                    uri_template=MEMORY_URI,
                    description="One stored memory as JSON (the get_memory tool's answer).",
                    mime_type="application/json",
                ),
                types.ResourceTemplate(
                    name="agent-profile",
                    uri_template=PROFILE_URI,
                    description="One agent profile (its store and search overrides) as JSON.",
                    mime_type="application/json",
                ),
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        who = _caller(ctx, principal)
        operation = _resource_operation(uri)
        if operation is None or who is None:
            expected = ", ".join((MEMORY_URI, PROFILES_URI, PROFILE_URI))
            raise MCPError(INVALID_PARAMS, f"Unknown resource {uri!r}; expected one of {expected}.")
        url_name, path_args = operation
        result = await anyio.to_thread.run_sync(
            partial(call_operation, caller=who, method="GET", url_name=url_name, path_args=path_args)
        )
        if not result.ok:
            raise MCPError(INVALID_PARAMS, result.data["error"]["message"], result.data)
        text = json.dumps(result.data)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    return Server(
        "agent-memory",
        version="1.0.0",
        instructions=INSTRUCTIONS,
        # Over streamable HTTP the SDK checks a call's Mcp-Param-* headers against the tool's input
        # schema; without this lookup it runs the whole tools/list handler (and serialises every
        # tool's schemas) before each tools/call to find that one schema.
        get_tool_input_schema=input_schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )
