"""A bounded schemathesis run over every operation of the API: no input may cause a 5xx.

Fixed seed (derandomized) and a fixed number of examples per operation, so it is repeatable and
takes about a minute on 2 cores. It checks for server errors only; response conformance to the
schema is the schema's own tests' business.
"""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

EXAMPLES_PER_OPERATION = 20


@schemathesis.serializer("application/x-ndjson")
def _json_lines(ctx: object, value: object) -> bytes:
    """The import's body (JSONL, documented as a string): the generated text as it is, or a generated
    list of documents one per line."""
    if isinstance(value, str):
        return value.encode("utf-8", errors="surrogatepass")
    items = value if isinstance(value, list) else [value]
    return "".join(json.dumps(item) + "\n" for item in items).encode()


@pytest.fixture
def wsgi_app(monkeypatch):  # type: ignore[no-untyped-def]
    """The real WSGI application, minus the per-request connection close (as Django's test client
    does): the test's transaction must survive the requests. Imported without the server's warm-up,
    which would leave the judge's caches warm for the tests that check that warm-up."""
    from django.core import signals
    from django.db import close_old_connections

    monkeypatch.setenv("EMBEDDING_WARMUP", "false")
    from project.wsgi import application

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield application
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.mark.django_db
def test_no_operation_answers_a_server_error(tenant_a, wsgi_app):
    application = wsgi_app

    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    headers = {"Authorization": f"Bearer {tenant_a.raw_key}"}
    server_errors: list[str] = []
    statuses: list[int] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def call(case: schemathesis.Case) -> None:
            response = case.call(headers=headers)
            statuses.append(response.status_code)
            if response.status_code >= 500:
                server_errors.append(
                    f"{case.method} {case.formatted_path} -> {response.status_code}: "
                    f"{response.text[:200]}\n  {case.as_curl_command()}"
                )

        call()
    assert operations >= 15 and len(statuses) >= operations * 5
    assert any(status < 300 for status in statuses) and any(status == 400 for status in statuses)
    assert not server_errors, "\n".join(server_errors[:20])
