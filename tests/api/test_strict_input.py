"""Strict input: unknown fields and query parameters, forbidden characters, size and depth limits,
and JSON (never HTML, never a 5xx) for every client mistake."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator

from memory_app.models import Memory, SessionMessage
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db


def _operations() -> list[tuple[str, str, bool]]:
    """(path template, method, has a JSON body) for every operation of the API's schema."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    out = []
    for path, item in schema["paths"].items():
        if not path.startswith("/api/v1/") or path.endswith("/health"):
            continue  # health is public and takes nothing
        for method, operation in item.items():
            # A JSON body has fields; the import's JSONL body has records (an unknown type is refused
            # by name there: tests/api/test_transfer_api.py).
            content = operation.get("requestBody", {}).get("content", {})
            out.append((path, method.upper(), "application/json" in content))
    return out


OPERATIONS = _operations()


def _url(template: str, memory_id: int) -> str:
    return (
        template.replace("{memory_id}", str(memory_id))
        .replace("{change_id}", "1")
        .replace("{session_id}", "s1")
        .replace("{user_id}", "u1")
        .replace("{agent_id}", "bot")
    )


def _call(client, method: str, url: str, body=None):  # type: ignore[no-untyped-def]
    payload = json.dumps(body) if body is not None else None
    return client.generic(method, url, payload, content_type="application/json")


def test_every_operation_is_covered():
    assert len(OPERATIONS) >= 15


@pytest.mark.parametrize(("template", "method", "has_body"), OPERATIONS)
def test_every_operation_rejects_an_unknown_query_parameter_by_name(tenant_a, template, method, has_body):
    memory = MemoryFactory(tenant=tenant_a.tenant, user_id="u1")
    response = _call(tenant_a.client, method, _url(template, memory.pk) + "?not_a_param=1")
    assert response.status_code == 400, response.content
    assert "not_a_param" in response.json()["error"]["fields"]


@pytest.mark.parametrize(
    ("template", "method"), [(t, m) for t, m, has_body in OPERATIONS if has_body and m != "DELETE"]
)
def test_every_body_rejects_an_unknown_field_by_name(tenant_a, template, method):
    memory = MemoryFactory(tenant=tenant_a.tenant, user_id="u1")
    response = _call(tenant_a.client, method, _url(template, memory.pk), {"not_a_field": 1})
    assert response.status_code == 400, response.content
    assert any("not_a_field" in key for key in response.json()["error"]["fields"])


def test_a_top_level_user_id_in_a_search_scopes_it_and_is_never_dropped(tenant_a):
    """The report: a misplaced user_id was once ignored and the search returned every user's
    memories; the top level is now where the user is named."""
    MemoryFactory(tenant=tenant_a.tenant, user_id="someone-else", text="Someone else's secret plan")
    response = tenant_a.client.post(
        "/api/v1/memories/search", {"query": "secret plan", "user_id": "u1"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["results"] == []


def test_a_misplaced_filter_inside_filters_is_refused_too(tenant_a):
    response = tenant_a.client.post(
        "/api/v1/memories/search", {"query": "x", "filters": {"userid": "u1"}}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"filters": {"userid": ["Unknown field."]}}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": "a\x00b"}, "text"),
        ({"text": "ok", "metadata": {"note": "a\x00b"}}, "metadata"),
        ({"text": "ok", "metadata": {"k\x00": "v"}}, "metadata"),
        ({"text": "ok", "metadata": {"deep": [{"x": "\x07"}]}}, "metadata"),
        ({"text": "ok", "topics": ["fine", "bad\x1b"]}, "topics"),
        ({"text": "ok", "user_id": "u\x00"}, "user_id"),
    ],
)
def test_forbidden_characters_in_a_store_are_a_400_naming_the_field(tenant_a, body, field):
    """The report: NUL in metadata or a text answered 503 "database is unavailable"."""
    response = tenant_a.client.post("/api/v1/memories", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert not Memory.objects.filter(tenant=tenant_a.tenant).exists()


def test_a_lone_surrogate_is_a_400_not_a_500(tenant_a):
    raw = '{"text": "broken \\ud800 text"}'
    response = tenant_a.client.generic("POST", "/api/v1/memories", raw, content_type="application/json")
    assert response.status_code == 400 and "text" in response.json()["error"]["fields"]


def test_tabs_and_newlines_are_still_welcome(tenant_a):
    response = tenant_a.client.post(
        "/api/v1/memories", {"text": "line one\n\tline two\r\n", "user_id": "u1"}, format="json"
    )
    assert response.status_code == 201


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("/api/v1/sessions/s%00x/messages", "session_id"),
        ("/api/v1/sessions/s%01x", "session_id"),
        ("/api/v1/users/u%00/memories", "user_id"),
    ],
)
def test_forbidden_characters_in_a_path_id_are_a_400_naming_it(tenant_a, url, name):
    method = "POST" if url.endswith("messages") else "GET"
    if url.startswith("/api/v1/users"):
        method = "DELETE"
    response = _call(
        tenant_a.client, method, url, {"role": "user", "content": "hi"} if method == "POST" else None
    )
    assert response.status_code == 400, response.content
    assert name in response.json()["error"]["fields"]


def test_a_forbidden_character_in_a_query_parameter_is_a_400(tenant_a):
    response = tenant_a.client.get("/api/v1/memories", {"user_id": "u\x00"})
    assert response.status_code == 400 and "user_id" in response.json()["error"]["fields"]


@override_settings(API_MAX_REQUEST_BYTES=4096)
def test_a_body_over_the_limit_is_a_413_with_the_json_error_body(tenant_a):
    response = tenant_a.client.post("/api/v1/memories", {"text": "x" * 5000}, format="json")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
    assert not Memory.objects.filter(tenant=tenant_a.tenant).exists()


def test_a_three_megabyte_session_append_works_below_the_default_limit(tenant_a):
    """The report: Django's 2.5 MB default made a 3 MB append a 500 HTML page."""
    messages = [{"role": "user", "content": "word " * 190_000} for _ in range(3)]
    body = {"messages": messages}
    assert len(json.dumps(body)) > 2_800_000
    response = tenant_a.client.post("/api/v1/sessions/big/messages", body, format="json")
    assert response.status_code == 201, response.content[:300]
    data = response.json()
    # All three were appended (the session then trims itself to its token budget).
    assert len(data["appended"]) == 3 and data["trimmed_now"] + SessionMessage.objects.count() == 3


def test_pathologically_nested_json_is_a_400(tenant_a):
    raw = '{"text": "x", "metadata": ' + "[" * 5000 + "]" * 5000 + "}"
    response = tenant_a.client.generic("POST", "/api/v1/memories", raw, content_type="application/json")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")


def test_moderately_nested_metadata_is_kept(tenant_a):
    nested: dict = {"leaf": 1}
    for _ in range(20):
        nested = {"n": nested}
    response = tenant_a.client.post(
        "/api/v1/memories", {"text": "deep", "user_id": "u1", "metadata": nested}, format="json"
    )
    assert response.status_code == 201


def test_an_unknown_api_url_answers_json_not_html(tenant_a):
    response = tenant_a.client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_malformed_json_is_a_json_400(tenant_a):
    response = tenant_a.client.generic(
        "POST", "/api/v1/memories", "{not json", content_type="application/json"
    )
    assert response.status_code == 400 and response.json()["error"]
