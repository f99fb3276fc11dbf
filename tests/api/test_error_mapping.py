"""Database errors answered by their cause, and path parameters checked before any query.

Only a connection-level failure is a 503 (a client may retry it); a value the database refuses is a
400, a conflicting concurrent change a 409 after one retry inside the service, anything else a 500.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlencode

import pytest
from django.db import DatabaseError, IntegrityError, InterfaceError, connection, transaction
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_app.api.errors import exception_handler
from memory_app.db.conflicts import retry_on_conflict
from memory_app.errors import ApplicationError
from memory_app.models import ConversationSession, SessionMessage

pytestmark = pytest.mark.django_db


class _View:
    pass


def _handled(exc: Exception) -> Any:
    return exception_handler(exc, {"view": _View()})


def _raised_by(sql: str) -> DatabaseError:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)
    except DatabaseError as exc:
        return exc
    raise AssertionError(f"{sql} raised nothing")


def test_a_value_out_of_range_is_a_400_not_an_outage():
    response = _handled(_raised_by("SELECT 99999999999999999999::bigint"))
    assert response.status_code == 400
    assert response.data["error"]["code"] == "invalid"
    assert "out of range" in response.data["error"]["message"]


def test_an_insert_of_a_too_long_value_is_a_400_naming_the_field(tenant_a):
    exc = _raised_by(
        "INSERT INTO memory_app_conversationsession (tenant_id, session_id, user_id, agent_id, summary, "
        f"token_count, trimmed_count, created_at, updated_at) VALUES ({tenant_a.tenant.pk}, "
        f"'{'s' * 300}', '', '', '', 0, 0, now(), now())"
    )
    response = _handled(exc)
    assert response.status_code == 400
    assert "too long" in response.data["error"]["message"]
    assert response.data["error"]["fields"]


def test_a_conflicting_concurrent_change_is_a_409_saying_what_changed(tenant_a):
    ConversationSession.objects.create(tenant=tenant_a.tenant, session_id="s1")
    try:
        with transaction.atomic():
            ConversationSession.objects.create(tenant=tenant_a.tenant, session_id="s1")
    except IntegrityError as exc:
        response = _handled(exc)
    assert response.status_code == 409
    assert response.data["error"]["code"] == "conflict"
    assert "conversationsession" in response.data["error"]["message"]


def test_a_conflict_relayed_by_a_citus_coordinator_names_the_constraint_without_its_shard_number():
    # A coordinator relays the worker's message only: no table or constraint field, shard-suffixed names.
    class Diag:
        table_name = constraint_name = None
        message_primary = 'duplicate key value violates unique constraint "session_tenant_sid_unique_102025"'

    exc = IntegrityError("duplicate key")
    exc.diag = Diag()  # type: ignore[attr-defined]
    message = _handled(exc).data["error"]["message"]
    assert "(session_tenant_sid_unique on conversationsession)" in message


def test_a_lost_connection_or_a_timeout_is_a_503_with_retry_after():
    for exc in (
        _raised_by("SET LOCAL statement_timeout = 1; SELECT pg_sleep(0.2)"),
        InterfaceError("closed"),
    ):
        response = _handled(exc)
        assert response.status_code == 503
        assert response["Retry-After"]
        assert response.data["error"]["code"] == "unavailable"


def test_a_programming_error_is_a_500_not_a_retryable_503():
    response = _handled(_raised_by("SELECT * FROM no_such_table"))
    assert response.status_code == 500


def test_an_integrity_error_is_retried_once_then_answered_409():
    calls: list[int] = []

    @retry_on_conflict
    @transaction.atomic
    def flaky() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise IntegrityError("first try collides")
        return "ok"

    assert flaky() == "ok" and len(calls) == 2

    @retry_on_conflict
    @transaction.atomic
    def always() -> None:
        calls.append(1)
        raise IntegrityError("collides again")

    with pytest.raises(ApplicationError) as raised:
        always()
    assert raised.value.status == 409 and "concurrent change" in raised.value.message


def test_a_300_character_session_id_is_a_400_naming_the_parameter_and_stores_nothing(tenant_a):
    long_id = "s" * 300
    response = tenant_a.client.post(
        f"/api/v1/sessions/{long_id}/messages", {"role": "user", "content": "hello"}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "session_id" in response.json()["error"]["fields"]
    assert not ConversationSession.objects.exists() and not SessionMessage.objects.exists()


def test_an_id_beyond_bigint_is_a_400_not_a_database_error(tenant_a):
    for url in ("/api/v1/memories/99999999999999999999999", "/api/v1/memories/99999999999999999999/lineage"):
        response = tenant_a.client.get(url)
        assert response.status_code == 400, (url, response.content)
        assert "memory_id" in response.json()["error"]["fields"]


def _wsgi_client(tenant_client) -> Client:  # type: ignore[no-untyped-def]
    """Django's own test client: it percent-decodes the path into WSGI's latin-1 PATH_INFO as a
    server does (DRF's APIClient hands the escapes over as text)."""
    return Client(HTTP_AUTHORIZATION=f"Bearer {tenant_client.raw_key}")


def test_a_path_that_is_not_utf8_is_a_400(tenant_a):
    response = _wsgi_client(tenant_a).delete("/api/v1/users/%FF%FEbad/memories")
    assert response.status_code == 400
    assert "UTF-8" in response.json()["error"]["fields"]["user_id"][0]


def _path_parameters(client) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    """(method, path template, parameter) for every path parameter of every operation of the schema."""
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    found = []
    for template, operations in schema["paths"].items():
        for method, operation in operations.items():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path":
                    found.append((method.upper(), template, parameter["name"]))
    return found


RESERVED = "/?#[]@!$&'()*+,;=% "
BAD_VALUES = st.one_of(
    st.text(min_size=256, max_size=600).filter(lambda s: "/" not in s),
    st.binary(min_size=1, max_size=12).filter(lambda b: not _is_utf8(b)),
)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _encoded(value: str | bytes) -> str:
    raw = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    return "".join(f"%{b:02X}" for b in raw)


def test_every_path_parameter_refuses_long_non_utf8_and_reserved_values_with_a_4xx(tenant_a):
    parameters = _path_parameters(tenant_a.client)
    client = _wsgi_client(tenant_a)
    assert {name for _m, _t, name in parameters} >= {"memory_id", "session_id", "user_id", "change_id"}

    @settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(
        target=st.sampled_from(parameters),
        value=st.one_of(
            BAD_VALUES,
            st.text(alphabet=RESERVED, min_size=1, max_size=8).map(lambda s: f"a{s}b"),
        ),
    )
    def probe(target: tuple[str, str, str], value: str | bytes) -> None:
        method, template, name = target
        path = template.replace("{" + name + "}", _encoded(value))
        for other in ("memory_id", "change_id", "session_id", "user_id"):
            path = path.replace("{" + other + "}", "1")
        response = client.generic(method, path, "{}", content_type="application/json")
        status = response.status_code
        assert status < 500, (method, path, status, response.content[:300])
        long_or_binary = isinstance(value, bytes) or len(value) > 255
        if long_or_binary:
            assert 400 <= status < 500, (method, path, status)

    probe()


def test_an_edited_cursor_is_a_404_never_a_server_error(tenant_a):
    tenant_a.client.post("/api/v1/memories", {"text": "User likes tea", "user_id": "u1"}, format="json")
    for position in ("p=abc", "p=99999999999999999999999", "p=-99999999999999999999999&r=1"):
        cursor = base64.b64encode(position.encode()).decode()
        response = tenant_a.client.get(f"/api/v1/memories?{urlencode({'cursor': cursor})}")
        assert response.status_code == 404, (position, response.content)
        assert response.json()["error"]["message"] == "Invalid cursor"


def test_a_row_deleted_under_a_running_request_is_a_404_not_a_500():
    response = _handled(ConversationSession.DoesNotExist("gone"))
    assert response.status_code == 404 and response.data["error"]["code"] == "not_found"
