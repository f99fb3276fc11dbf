"""OpenAPI schema extensions: bearer API keys, and the error responses every operation can give.

The errors are added by a post-processing hook rather than declared on each view because they follow
from how an operation is built, not from what it does: a secured operation can answer 401, one that
reads a body or query parameters 400, and 429 past its key's request rate (QUOTA_REQUESTS_PER_MINUTE,
`api/throttling.py`), every one 503 when the database is down (`api/errors.py`). 403, 404 and 409
depend on the operation and are declared on the views that raise them.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import OpenApiGeneratorExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "memory_app.api.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <api key>"}


def schema_extensions_load() -> None:
    """Resolves every registered extension's target class now, at start-up (AppConfig.ready).

    Why: drf-spectacular resolves them lazily, on the first schema generation, by assigning the
    class attribute in place; two requests generating the schema at once in a fresh process raced on
    it and one answered 500 ('NoneType' object has no attribute 'startswith'). Once loaded, nothing
    is written again."""
    import drf_spectacular.openapi  # noqa: F401  (registers the bundled contrib extensions)

    pending = list(OpenApiGeneratorExtension.__subclasses__())
    while pending:
        base = pending.pop()
        pending.extend(base.__subclasses__())
        for extension in getattr(base, "_registry", ()):
            if isinstance(extension.target_class, str):
                extension._load_class()


ERROR_COMPONENT = "Error"
ERROR_EXAMPLES: dict[str, dict[str, Any]] = {
    "400": {
        "summary": "invalid input (one message list per field)",
        "code": "invalid",
        "message": "Invalid input.",
        "fields": {"query": ["This field is required."]},
    },
    "401": {
        "summary": "missing, malformed or revoked API key",
        "code": "authentication_failed",
        "message": "Invalid or revoked API key.",
        "fields": {},
    },
    "403": {
        "summary": "the tenant's memory quota would be passed",
        "code": "quota_exceeded",
        "message": "The tenant holds 1000 active memories; storing 1 more would pass its quota of 1000.",
        "fields": {},
    },
    "404": {
        "summary": "no such object in this tenant",
        "code": "not_found",
        "message": "Memory 42 not found",
        "fields": {},
    },
    "409": {
        "summary": "the current state forbids it",
        "code": "conflict",
        "message": "A deleted memory cannot be edited.",
        "fields": {},
    },
    "429": {
        "summary": "past the API key's request rate",
        "code": "throttled",
        "message": "Request was throttled. Expected available in 12 seconds.",
        "fields": {},
    },
    "503": {
        "summary": "a dependency is down; retry later",
        "code": "unavailable",
        "message": "The database is unavailable; retry later.",
        "fields": {},
    },
}
DESCRIPTIONS = {
    "400": "Invalid input: `fields` maps each bad field to its messages; nothing was changed.",
    "401": "Missing, malformed or revoked API key (`Authorization: Bearer mem_...`).",
    "403": "Refused by the tenant's memory quota (`quota_exceeded`, QUOTA_MAX_MEMORIES); nothing was stored.",
    "404": "Not found in this API key's tenant.",
    "409": "Refused in the object's current state.",
    "429": "Past the API key's request rate (QUOTA_REQUESTS_PER_MINUTE); retry after `Retry-After` seconds.",
    "503": "The database (or another dependency) is unavailable; retry with backoff.",
}


def error_response(status: str) -> dict[str, Any]:
    example = dict(ERROR_EXAMPLES[status])
    summary = example.pop("summary")
    response: dict[str, Any] = {
        "description": DESCRIPTIONS[status],
        "content": {
            "application/json": {
                "schema": {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"},
                "examples": {example["code"]: {"summary": summary, "value": {"error": example}}},
            }
        },
    }
    if status == "429":
        response["headers"] = {
            "Retry-After": {"schema": {"type": "integer"}, "description": "seconds until the rate allows it"}
        }
    return response


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular post-processing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"])."""
    for item in result.get("paths", {}).values():
        for operation in item.values():
            responses = operation["responses"]
            wanted = {"503"}
            if any(operation.get("security", [])):
                wanted.update({"401", "429"})
            if "requestBody" in operation or any(p["in"] == "query" for p in operation.get("parameters", [])):
                wanted.add("400")
            for status in ERROR_EXAMPLES:
                current = responses.get(status)
                if (current is None and status in wanted) or (current is not None and _is_error(current)):
                    responses[status] = error_response(status)
            operation["responses"] = dict(sorted(responses.items()))
    return result


def _is_error(response: dict[str, Any]) -> bool:
    """Declared on the view with ErrorSerializer (a health report's own 503 body is kept)."""
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return schema.get("$ref") == f"#/components/schemas/{ERROR_COMPONENT}"


def to_json_schema(node: Any, *, strict: bool = False) -> Any:
    """An OpenAPI 3.0 schema fragment as JSON Schema 2020-12: `nullable` becomes a `null` alternative.
    `strict` (for checking responses) closes every object that lists its properties and requires them
    all, since a serializer renders every field it declares."""
    if isinstance(node, list):
        return [to_json_schema(item, strict=strict) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: to_json_schema(value, strict=strict) for key, value in node.items() if key != "nullable"}
    if "properties" in out and strict and "additionalProperties" not in out:
        out["additionalProperties"] = False
        out["required"] = sorted(out["properties"])
    if node.get("nullable"):
        if "type" in out and "allOf" not in out and "$ref" not in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def inline_refs(node: Any, components: dict[str, Any]) -> Any:
    """`node` with every `#/components/schemas/X` reference replaced by X itself (request and response
    schemas have no cycles), for consumers that take one self-contained schema (MCP tools)."""
    if isinstance(node, list):
        return [inline_refs(item, components) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = inline_refs(components[node["$ref"].rsplit("/", 1)[1]], components)
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return {key: inline_refs(value, components) for key, value in node.items()}


def drop_keys(node: Any, keys: frozenset[str]) -> Any:
    if isinstance(node, list):
        return [drop_keys(item, keys) for item in node]
    if not isinstance(node, dict):
        return node
    return {k: drop_keys(v, keys) for k, v in node.items() if k not in keys}


# Examples of request bodies and answers, by (method, path). Kept here rather than on the views so
# the views stay about behaviour; tests/project/test_openapi_conformance.py validates every example against
# its own schema, so an example that drifts from the API fails the suite.
MEMORY_EXAMPLE: dict[str, Any] = {
    "id": 42,
    "kind": "episodic",
    "user_id": "u1",
    "agent_id": "",
    "namespace": "default",
    "session_id": "s1",
    "text": "User's BMI goal is 24",
    "topics": ["health"],
    "entities": [],
    "event_type": "goal",
    "event_date": None,
    "context": "",
    "category": "",
    "fact_type": "",
    "source": "",
    "metadata": {},
    "status": "active",
    "pinned": False,
    "access_count": 3,
    "helpful_count": 1,
    "harmful_count": 0,
    "confidence": 0.82,
    "superseded_by": None,
    "supersedes": [17],
    "embedding_model": "all-MiniLM-L6-v2",
    "created_at": "2026-11-20T09:30:00Z",
    "updated_at": "2026-11-21T08:00:00Z",
    "last_accessed_at": "2026-11-22T18:12:05Z",
    "expires_at": None,
}
V1 = "/api/v1"
REQUEST_EXAMPLES: dict[tuple[str, str], dict[str, Any]] = {
    ("patch", f"{V1}/memories/{{memory_id}}"): {"text": "User's BMI goal is 23", "topics": ["health"]},
    ("post", f"{V1}/memories/{{memory_id}}/feedback"): {"signal": "helpful"},
    ("post", f"{V1}/context/all"): {
        "query": "plan my workouts for next week",
        "user_id": "u1",
        "session_id": "s1",
        "include_procedural": True,
    },
    ("post", f"{V1}/interactions"): {
        "session_id": "s1",
        "user_id": "u1",
        "user_message": "I prefer morning runs",
        "assistant_message": "Noted, mornings it is.",
        "query": "plan my runs",
        "tool_sequence": ["calendar", "weather"],
        "execution_time_ms": 120,
        "success_score": 0.9,
    },
    ("post", f"{V1}/sessions/{{session_id}}/messages"): {
        "messages": [
            {"role": "user", "content": "Hi! Can you help me plan a trip?"},
            {"role": "assistant", "content": "Of course. Where to?"},
        ],
        "user_id": "u1",
    },
    ("post", f"{V1}/procedures/record"): {
        "query": "weekly summary",
        "tool_sequence": ["aggregate_metrics", "compare_periods"],
        "execution_time_ms": 840,
        "success_score": 0.95,
        "user_id": "u1",
    },
    ("post", f"{V1}/procedures/suggest"): {"query": "summary of my week", "user_id": "u1"},
}
RESPONSE_EXAMPLES: dict[tuple[str, str, str], Any] = {
    ("get", f"{V1}/memories/{{memory_id}}", "200"): MEMORY_EXAMPLE,
    ("get", f"{V1}/memories", "200"): {
        "next": "https://memory.example/api/v1/memories?cursor=cD00Mg%3D%3D&page_size=1",
        "previous": None,
        "results": [MEMORY_EXAMPLE],
    },
    ("post", f"{V1}/memories/search", "200"): {
        "mode": "hybrid",
        "count": 1,
        "results": [
            {
                "memory": MEMORY_EXAMPLE,
                "text": "User's BMI goal is 24",
                "score": 0.71,
                "member_ids": [42],
                "cluster": None,
                "vector_score": 0.64,
                "lexical_score": 3.2,
            }
        ],
        "degraded": [],
        "time_window": None,
    },
    ("post", f"{V1}/memories", "201"): {
        "outcome": "superseded",
        "memory_id": 42,
        "related_ids": [17],
        "change_id": 9,
        "cluster_id": None,
        "relation": "update",
        "confidence": 0.93,
        "embedding_pending": False,
        "warnings": [],
        "memory": MEMORY_EXAMPLE,
    },
    ("post", f"{V1}/context", "200"): {
        "context": "- User's BMI goal is 24",
        "tokens": 9,
        "query": "what are my health goals?",
        "facts": [
            {
                "memory": MEMORY_EXAMPLE,
                "text": "User's BMI goal is 24",
                "score": 0.87,
                "similarity": 1.0,
                "member_ids": [42],
            }
        ],
        "degraded": [],
        "time_window": None,
    },
}


def add_examples(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular post-processing hook: REQUEST_EXAMPLES and RESPONSE_EXAMPLES."""
    paths = result.get("paths", {})
    for (method, path), value in REQUEST_EXAMPLES.items():
        media = paths[path][method]["requestBody"]["content"]["application/json"]
        media.setdefault("examples", {})["example"] = {"value": value}
    for (method, path, status), value in RESPONSE_EXAMPLES.items():
        media = paths[path][method]["responses"][status]["content"]["application/json"]
        media.setdefault("examples", {})["example"] = {"value": value}
    return result
