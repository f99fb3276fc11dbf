"""Strict input for every API operation: one mechanism each for fields, characters, size and depth.

- `StrictSerializer`: the base of every input serializer (bodies and query parameters). A key it
  does not know is a 400 naming it, so a misplaced field (`user_id` at the top level of a search)
  can never be silently dropped and widen a query. A string anywhere in its input (values, keys,
  nested metadata) with a forbidden character is a 400 naming the field.
- `StrictQueryParams` (a default permission class, so it runs before every view): query parameters
  the operation does not declare in its OpenAPI description (`extend_schema(parameters=...)`) are a
  400 naming them. The schema and the enforcement cannot drift apart.
- `DepthLimitedJSONParser`: JSON nested deeper than API_MAX_JSON_DEPTH is a 400, never a
  RecursionError.
- `ApiGuardMiddleware` (api/guard.py): the request-size limit (413), forbidden characters in path
  ids, and JSON bodies for API paths' 404/500 instead of Django's HTML pages.

Forbidden characters: NUL and the other C0 controls except tab, newline and carriage return (no
text a memory service stores needs them, and PostgreSQL refuses NUL in text), and lone UTF-16
surrogates (valid JSON escapes, but not text: they cannot be encoded as UTF-8).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator, Mapping
from inspect import isclass
from typing import Any

from django.conf import settings
from django.http import HttpResponse, QueryDict
from rest_framework import exceptions, parsers, permissions, serializers
from rest_framework.request import Request

FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")
# Query parameters of the cursor pagination every list operation shares.
PAGINATION_PARAMS = frozenset({"cursor", "page_size"})


def forbidden_message(value: str) -> str | None:
    found = FORBIDDEN.search(value)
    if found is None:
        return None
    return f"Contains a forbidden character (U+{ord(found.group()):04X}) at position {found.start()}."


def forbidden_in(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(where, message) for every string in `value` (keys included) with a forbidden character."""
    if isinstance(value, str):
        message = forbidden_message(value)
        if message:
            yield path, message
    elif isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and (message := forbidden_message(key)):
                yield path or "(key)", f"A key {message[0].lower()}{message[1:]}"
            yield from forbidden_in(item, where)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from forbidden_in(item, f"{path}.{index}" if path else str(index))


class StrictSerializer(serializers.Serializer):
    """Rejects keys it does not know and strings with forbidden characters, naming the field."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            # Query parameters (a QueryDict) may also carry the pagination cursor.
            known = set(self.fields) | (PAGINATION_PARAMS if isinstance(data, QueryDict) else set())
            errors: dict[str, list[str]] = {
                str(name): ["Unknown field."] for name in sorted(set(data) - known, key=str)
            }
            items = data.lists() if isinstance(data, QueryDict) else data.items()
            for key, value in items:
                if isinstance(key, str) and forbidden_message(key):
                    errors.setdefault("(key)", []).append(f"A field name has a forbidden character: {key!r}.")
                if isinstance(self.fields.get(key), serializers.BaseSerializer):
                    continue  # a nested serializer checks its own fields, with their own names
                for where, message in forbidden_in(value):
                    errors.setdefault(str(key), []).append(f"{where}: {message}" if where else message)
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


_reusable = threading.local()


def bound_input(serializer_class: type[serializers.Serializer], data: Any) -> serializers.Serializer:
    """`serializer_class(data=data)`, not yet validated: one instance per thread and class, its
    fields built once. A new serializer deep-copies every declared field, ~1 ms of a search request
    for its ~30 fields. Only for input serializers that read no context and keep no state of their
    own between calls; validating leaves the fields as it found them, and the results of the
    previous call are dropped first, so the caller reads its results before binding the next."""
    built: dict[type, serializers.Serializer] = _reusable.__dict__.setdefault("serializers", {})
    serializer = built.get(serializer_class)
    if serializer is None:
        serializer = built[serializer_class] = serializer_class()
    for attribute in ("_validated_data", "_errors", "_data"):
        serializer.__dict__.pop(attribute, None)
    serializer.initial_data = data
    return serializer


def validated_input(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """`serializer_class(data=data)`'s validated data, or its ValidationError (a 400), from the
    thread's instance (`bound_input`)."""
    serializer = bound_input(serializer_class, data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


_declared: dict[tuple[type, str], frozenset[str]] = {}


def declared_query_params(view: Any, method: str) -> frozenset[str]:
    """The query parameters an operation declares in its OpenAPI description (plus pagination)."""
    key = (type(view), method)
    cached = _declared.get(key)
    if cached is not None:
        return cached
    names = set(PAGINATION_PARAMS) if method == "GET" else set()
    handler = getattr(view, method.lower(), None)
    schema_class = getattr(handler, "kwargs", {}).get("schema")
    if schema_class is not None:
        schema = schema_class()
        schema.view, schema.method = view, method
        for parameter in schema.get_override_parameters():
            if isclass(parameter) and issubclass(parameter, serializers.Serializer):
                names |= set(parameter().fields)
            elif isinstance(parameter, serializers.Serializer):
                names |= set(parameter.fields)
            elif getattr(parameter, "location", "query") == "query" and getattr(parameter, "name", None):
                names.add(parameter.name)
    _declared[key] = frozenset(names)
    return _declared[key]


class StrictQueryParams(permissions.BasePermission):
    """A query parameter the operation does not declare is a 400 naming it (see module docstring)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        params = request.query_params
        if not params or not request.path.startswith("/api/v1/"):
            return True
        allowed = declared_query_params(view, request.method or "GET")
        errors: dict[str, list[str]] = {}
        for name, values in params.lists():
            if name not in allowed:
                errors[name] = ["Unknown query parameter."]
            for value in [name, *values]:
                if message := forbidden_message(value):
                    errors.setdefault(name if forbidden_message(name) is None else "(query)", []).append(
                        message
                    )
        if errors:
            raise exceptions.ValidationError(errors)
        return True


class DepthLimitedJSONParser(parsers.JSONParser):
    """JSON with a nesting limit: a body nested deeper than API_MAX_JSON_DEPTH is a 400."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise exceptions.ParseError("JSON nested too deeply.") from exc
        if depth_exceeds(data, settings.API_MAX_JSON_DEPTH):
            raise exceptions.ParseError(f"JSON nested deeper than {settings.API_MAX_JSON_DEPTH} levels.")
        return data


def depth_exceeds(data: Any, limit: int) -> bool:
    """Iterative, so a deep document cannot exhaust the stack here either."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = list(value.values())
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def json_error(code: str, message: str, status: int, fields: dict[str, Any] | None = None) -> Any:
    body = {"error": {"code": code, "message": message, "fields": fields or {}}}
    return HttpResponse(json.dumps(body), status=status, content_type="application/json")
