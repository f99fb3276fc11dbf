"""Checks real responses against the service's OpenAPI schema, strictly.

The schema is OpenAPI 3.0 (drf-spectacular); responses are checked as JSON Schema 2020-12 after two
changes: `nullable` becomes a `null` alternative, and every response object that lists its
properties gets `additionalProperties: false` and all its properties required. A DRF serializer
always renders every field it declares, so a field the view returns that the schema lacks, or one
the schema promises that the view leaves out, fails the check. Free-form objects (DictField) stay open.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from drf_spectacular.generators import SchemaGenerator
from jsonschema import Draft202012Validator, FormatChecker

from memory_app.api.schema import to_json_schema

METHODS = ("get", "post", "put", "patch", "delete")


@cache
def openapi_schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in METHODS
    }


def validator_for(
    schema: dict[str, Any], body_schema: dict[str, Any], *, strict: bool = True
) -> Draft202012Validator:
    components = to_json_schema(schema.get("components", {}).get("schemas", {}), strict=strict)
    root = {**to_json_schema(body_schema, strict=strict), "components": {"schemas": components}}
    return Draft202012Validator(root, format_checker=FormatChecker())


def body_errors(
    schema: dict[str, Any], body_schema: dict[str, Any], body: Any, *, strict: bool = True
) -> list[str]:
    validator = validator_for(schema, body_schema, strict=strict)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<body>'}: {e.message}" for e in validator.iter_errors(body)
    ]


def _pattern(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template)) + "$")


def match_operation(schema: dict[str, Any], method: str, path: str) -> str:
    """The path template serving `path` (a literal path wins over a template: /memories/search)."""
    templates = sorted(schema["paths"], key=lambda t: (t.count("{"), t))
    for template in templates:
        if method.lower() in schema["paths"][template] and _pattern(template).match(path):
            return template
    raise AssertionError(f"{method} {path} is not an operation of the schema")


@dataclass
class Conformance:
    """Records every (method, path template, status) checked, so a test can demand full coverage."""

    schema: dict[str, Any]
    seen: set[tuple[str, str, int]] = field(default_factory=set)

    def check(self, method: str, path: str, status: int, content: bytes, content_type: str | None) -> None:
        template = match_operation(self.schema, method, path.split("?", 1)[0])
        operation = self.schema["paths"][template][method.lower()]
        documented = operation["responses"]
        assert str(status) in documented, (
            f"{method} {template} answered {status}; documented: {sorted(documented)}: {content[:300]!r}"
        )
        self.seen.add((method.upper(), template, status))
        media = documented[str(status)].get("content")
        if not media:
            assert not content, (
                f"{method} {template} {status}: the schema promises no body, got {content[:200]!r}"
            )
            return
        if content_type and content_type.startswith("application/x-ndjson"):
            # JSON lines (the export): every line is one document of the documented schema.
            schema = media["application/x-ndjson"]["schema"]
            lines = content.decode().splitlines()
            errors = [e for line in lines for e in body_errors(self.schema, schema, json.loads(line))]
            assert lines and not errors, f"{method} {template} {status}: " + "\n".join(errors[:20])
            return
        assert content_type and content_type.startswith("application/json"), (method, template, content_type)
        errors = body_errors(self.schema, media["application/json"]["schema"], json.loads(content))
        assert not errors, f"{method} {template} {status} does not match the schema:\n" + "\n".join(
            errors[:20]
        )

    def covered(self) -> set[tuple[str, str]]:
        return {(method, template) for method, template, _ in self.seen}
