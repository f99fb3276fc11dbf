"""A tool's input schema as an agent needs it: the REST operation's request schema without the
operator's knobs and without the serializer boilerplate an LLM pays for in every `tools/list`.

Why trim rather than write the schemas by hand: the fields, limits and defaults stay the API's own
(tools.py derives them from the OpenAPI document); only what no agent should set, or need to read,
goes. Scope fields (`user_id`, `agent_id`, `session_id`, `namespace`) are never trimmed.
"""

from __future__ import annotations

import re
from typing import Any

from memory_app.overrides import knob_names

# How the service retrieves, deduplicates and judges: settings and agent profiles hold them
# (docs/OPERATIONS.md); a tool call that sets one is refused (tools.ToolSpec.call) rather than
# silently obeyed or ignored.
OPERATOR_KNOBS = knob_names() | frozenset(
    {
        "consistency",
        "max_distance",
        "extraction",
        # Whether a time in the query boosts or filters: how the service ranks, like mmr.
        "query_time",
        # The clock a query's "yesterday" is read against: for replays and evaluation; an agent
        # speaks now, the server's time.
        "now",
        # Which fields each result keeps: MCP results are already compact (mcp/results.py).
        "fields",
    }
)
KNOB_MESSAGE = "Set by the operator (settings, agent profile), not by a tool call."
SCOPE_FIELDS = frozenset({"user_id", "agent_id", "session_id", "namespace"})
# OpenAPI-only keys, and size limits: no agent's argument comes near them, and one that did would get
# the API's 400 naming the field and its limit.
NOISE = frozenset(
    {
        "readOnly",
        "writeOnly",
        "example",
        "examples",
        "nullable",
        "maxLength",
        "minLength",
        "maxItems",
        "minItems",
    }
)
# A numeric bound this large only guards the database, as the size limits do.
HUGE = 1_000_000
# drf-spectacular's rendering of a choice field's labels ("* `user` - User"): the enum says it.
_ENUM_LINES = re.compile(r"^\* `[^`]*` - .*$\n?", re.MULTILINE)
# A serializer's docstring that says how it validates (every input serializer rejects unknown keys).
_BOILERPLATE = ("Rejects keys it does not know", "One memory to store.")


def without_knobs(schema: dict[str, Any]) -> dict[str, Any]:
    """The knobs out; and a scope field given at the top level is not listed again in `filters`
    (where the API still accepts it)."""
    properties = {
        name: value
        for name, value in schema["properties"].items()
        if name not in OPERATOR_KNOBS or name in SCOPE_FIELDS
    }
    for name in SCOPE_FIELDS & properties.keys():
        # Every tool's description says whom user_id names; the field's own words repeat it.
        properties[name] = {k: v for k, v in properties[name].items() if k != "description"}
    filters = properties.get("filters")
    if isinstance(filters, dict) and isinstance(filters.get("properties"), dict):
        nested = {
            k: v for k, v in filters["properties"].items() if k not in SCOPE_FIELDS or k not in properties
        }
        properties["filters"] = {**filters, "properties": nested}
    required = [name for name in schema.get("required", []) if name in properties]
    return {**schema, "properties": properties, "required": required}


def _description(text: str) -> str:
    text = _ENUM_LINES.sub("", text).strip()
    return "" if text.startswith(_BOILERPLATE) else text


def _collapse(node: dict[str, Any]) -> dict[str, Any]:
    """One variant instead of `allOf: [x]` or `anyOf/oneOf: [x, null]` (an agent omits a field
    rather than sending null)."""
    for key in ("allOf", "anyOf", "oneOf"):
        variants = node.get(key)
        if not isinstance(variants, list):
            continue
        real = [v for v in variants if v not in ({"type": "null"}, {"enum": [None]})]
        if len(real) == 1 and isinstance(real[0], dict):
            rest = {k: v for k, v in node.items() if k != key}
            inner = _collapse(real[0])
            node = {**inner, **rest, "description": rest.get("description") or inner.get("description", "")}
    if isinstance(node.get("enum"), list) and None in node["enum"]:
        node = {**node, "enum": [value for value in node["enum"] if value is not None]}
    if isinstance(node.get("type"), list):
        types = [t for t in node["type"] if t != "null"]
        node = {**node, "type": types[0] if len(types) == 1 else types}
    return node


def _says_nothing(key: str, value: Any) -> bool:
    """A number's storage format, a bound only the database needs, nothing required, an empty
    or false default (an agent leaves such a field out)."""
    if key == "format":
        return value in ("double", "float", "int64", "int32")
    if key == "maximum":
        return isinstance(value, int | float) and value >= HUGE
    if key == "required":
        return value == []
    return key == "default" and (value is False or value in ("", {}, []))


def tidy(node: Any) -> Any:
    """Serializer boilerplate out: enum label lists, validation docstrings, `format: double`,
    single-variant wrappers and nullability, empty descriptions."""
    if isinstance(node, list):
        return [tidy(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = _collapse(node)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in NOISE:
            continue
        if key == "description" and isinstance(value, str):
            value = _description(value)
            if not value:
                continue
        elif _says_nothing(key, value):
            continue
        elif key == "properties" and isinstance(value, dict):
            value = {name: tidy(field) for name, field in value.items()}
        else:
            value = tidy(value)
        out[key] = value
    return out
