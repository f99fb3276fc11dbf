"""memory_app.db: the vector literal, transaction-scoped settings, locks, counts and the binding
assumption that lets several statements go in one round trip."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from memory_app.db import (
    advisory_lock_key,
    advisory_xact_lock,
    count_up_to,
    execute_all,
    fetch_all,
    fetch_all_prepared,
    fetch_one,
    halfvec_from_binary,
    halfvecs_from_binary,
    hnsw_settings,
    index_valid,
    local_settings,
    set_local,
    set_local_sql,
    vector_literal,
)
from memory_app.models import Memory
from tests.factories import MemoryFactory

FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


def _setting(name: str) -> str:
    """The current value; '' for a never-set custom option (NULL before the first set_config, an
    empty placeholder after one that ended)."""
    row = fetch_one("SELECT current_setting(%s, true)", [name])
    return (row[0] if row else None) or ""


@given(arrays(np.float32, st.integers(1, 64), elements=FLOAT32))
def test_the_literal_gives_every_float32_back_exactly_when_parsed(vector: np.ndarray) -> None:
    text = vector_literal(vector)
    parsed = np.array([np.float32(x) for x in text[1:-1].split(",")], dtype=np.float32)
    assert parsed.tobytes() == vector.tobytes() or np.array_equal(parsed, vector)  # -0.0 == 0.0


@pytest.mark.django_db
@settings(max_examples=25, deadline=None)
@given(arrays(np.float32, 384, elements=FLOAT32))
def test_pgvector_stores_the_literal_as_the_same_float32_values(vector: np.ndarray) -> None:
    row = fetch_one("SELECT %s::vector::real[]", [vector_literal(vector)])
    assert row is not None
    assert np.array_equal(np.asarray(row[0], dtype=np.float32), vector)


@pytest.mark.django_db
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 5))
def test_halfvecs_decoded_together_are_each_halfvec_decoded_alone(seed: int, count: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = list((rng.normal(size=(count, 384)) * rng.choice([1e-4, 1.0, 100.0])).astype(np.float16))
    literals = [vector_literal(v.astype(np.float32)) for v in vectors]
    rows = fetch_all("SELECT halfvec_send(v::halfvec) FROM unnest(%s::text[]) v", [literals])
    raws = [row[0] for row in rows]
    together = halfvecs_from_binary(raws)
    for raw, vector, decoded in zip(raws, vectors, together, strict=True):
        alone = halfvec_from_binary(raw)
        assert alone is not None
        assert np.array_equal(decoded, alone)
        assert np.array_equal(decoded, vector.astype(np.float32))


@pytest.mark.django_db
def test_halfvecs_with_a_missing_vector_or_of_two_widths_are_each_decoded_alone() -> None:
    literals = [vector_literal(np.full(size, 0.5, dtype=np.float32)) for size in (4, 4, 6)]
    rows = fetch_all("SELECT halfvec_send(v::halfvec) FROM unnest(%s::text[]) v", [literals])
    raws = [row[0] for row in rows]
    for mixed in ([raws[0], None, raws[1]], raws):
        decoded = halfvecs_from_binary(mixed)
        alone = [halfvec_from_binary(raw) for raw in mixed]
        assert [None if d is None else d.tolist() for d in decoded] == [
            None if a is None else a.tolist() for a in alone
        ]


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [float("inf")]])
def test_the_literal_refuses_empty_and_non_finite_vectors(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        vector_literal(bad)


@pytest.mark.django_db(transaction=True)
def test_set_local_settings_end_with_their_transaction() -> None:
    before = _setting("hnsw.ef_search")
    with transaction.atomic():
        set_local(hnsw_settings(ef_search=123))
        assert _setting("hnsw.ef_search") == "123"
        assert _setting("hnsw.iterative_scan") == "relaxed_order"
    assert _setting("hnsw.ef_search") == before


@pytest.mark.django_db(transaction=True)
def test_local_settings_outside_a_transaction_open_one_and_end_with_it() -> None:
    before = _setting("hnsw.ef_search")
    with local_settings(hnsw_settings(ef_search=77)):
        assert connection.in_atomic_block
        assert _setting("hnsw.ef_search") == "77"
    assert not connection.in_atomic_block
    assert _setting("hnsw.ef_search") == before


@pytest.mark.django_db(transaction=True)
def test_isolated_local_settings_leave_the_callers_transaction_as_it_was() -> None:
    with transaction.atomic():
        set_local({"hnsw.ef_search": "50"})
        with local_settings({"hnsw.ef_search": "300"}):
            assert _setting("hnsw.ef_search") == "300"
        assert _setting("hnsw.ef_search") == "50"
        with local_settings({"hnsw.ef_search": "301"}, isolate=False):
            pass
        assert _setting("hnsw.ef_search") == "301"


@pytest.mark.django_db(transaction=True)
def test_set_local_and_advisory_locks_refuse_to_run_outside_a_transaction() -> None:
    with pytest.raises(RuntimeError):
        set_local({"hnsw.ef_search": "10"})
    with pytest.raises(RuntimeError):
        advisory_xact_lock(1)


@pytest.mark.django_db
def test_django_binds_parameters_on_the_client_so_statements_can_share_a_round_trip() -> None:
    with connection.cursor() as cursor:
        assert isinstance(cursor.cursor, psycopg.ClientCursor)
    rows = execute_all([set_local_sql({"hnsw.ef_search": "61"}), ("SELECT %s::int + 1", [41])])
    assert rows == [(42,)]
    assert _setting("hnsw.ef_search") == "61"


def test_server_side_binding_is_refused_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    options = {**connection.settings_dict.get("OPTIONS", {}), "server_side_binding": True}
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    with pytest.raises(ImproperlyConfigured, match="client-side parameter binding"):
        execute_all([("SELECT 1", [])])


@pytest.mark.django_db
def test_advisory_locks_are_held_until_the_transaction_ends() -> None:
    key = advisory_lock_key(7, "u", "default", "episodic")
    assert key == advisory_lock_key("7", "u", "default", "episodic")
    advisory_xact_lock(key, key)
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF  # pg_locks shows a bigint key as two 32-bit halves
    row = fetch_one(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() "
        "AND objsubid = 1 AND classid = %s::bigint::oid AND objid = %s::bigint::oid",
        [unsigned >> 32, unsigned & 0xFFFF_FFFF],
    )
    assert row == (1,)


@pytest.mark.django_db
def test_a_capped_count_stops_at_its_limit() -> None:
    where = "g < %s"
    table = "generate_series(1, 1000) g"
    assert count_up_to(table=table, where=where, params=[10], limit=100) == 9
    assert count_up_to(table=table, where=where, params=[1000], limit=100) == 100


@pytest.mark.django_db
def test_index_validity_is_none_for_a_missing_index_and_true_for_a_built_one() -> None:
    assert index_valid("no_such_index_anywhere") is None
    assert index_valid("memory_embedding_hnsw") is True


@pytest.mark.django_db
def test_any_lookup_filters_on_a_list_with_one_statement_text_whatever_its_length() -> None:
    first, second, third = MemoryFactory.create_batch(3)
    others = MemoryFactory(tenant=first.tenant)
    found = Memory.objects.filter(pk__any=[first.pk, third.pk, others.pk + 1000])
    assert set(found.values_list("pk", flat=True)) == {first.pk, third.pk}
    assert not Memory.objects.filter(pk__any=[]).exists()
    with CaptureQueriesContext(connection) as queries:
        list(Memory.objects.filter(pk__any=[first.pk]).values_list("pk"))
        list(Memory.objects.filter(pk__any=[first.pk, second.pk, third.pk]).values_list("pk"))
    texts = [q["sql"] for q in queries.captured_queries]
    assert all("= ANY(" in text for text in texts)
    assert texts[0].split("ANY(")[0] == texts[1].split("ANY(")[0]
    # Other integer columns take it too (a foreign key's id).
    assert list(Memory.objects.filter(tenant_id__any=[others.tenant_id]).order_by("pk")) == [first, others]


def _backend_pid() -> int:
    row = fetch_one("SELECT pg_backend_pid()")
    assert row is not None
    return int(row[0])


def _drop_this_connection() -> None:
    """What a database restart does to an open connection: the server ends its backend."""
    from django.db import OperationalError

    with pytest.raises(OperationalError):
        fetch_one("SELECT pg_terminate_backend(pg_backend_pid())")


@pytest.mark.django_db(transaction=True)
def test_a_read_on_a_connection_the_database_dropped_runs_again_on_a_new_one() -> None:
    from memory_app.db import checked_by_first_statement

    first = _backend_pid()
    _drop_this_connection()
    connection.health_check_done = True  # as if Django had already checked it in this request
    runs: list[int] = []

    def read() -> int:
        runs.append(1)
        return _backend_pid()

    assert checked_by_first_statement(read) != first
    assert len(runs) == 2


@pytest.mark.django_db(transaction=True)
def test_a_read_checked_by_its_first_statement_sends_no_select_1_before_it(monkeypatch) -> None:
    from django.db.backends.postgresql.base import DatabaseWrapper

    from memory_app.db import checked_by_first_statement

    _backend_pid()
    connection.health_check_done = False  # what each request's start sets
    checks: list[int] = []
    original = DatabaseWrapper.is_usable
    monkeypatch.setattr(DatabaseWrapper, "is_usable", lambda self: checks.append(1) or original(self))
    checked_by_first_statement(_backend_pid)
    assert checks == []


@pytest.mark.django_db(transaction=True)
def test_a_statement_failing_on_a_live_connection_is_raised_and_not_run_again() -> None:
    from django.db import OperationalError

    from memory_app.db import checked_by_first_statement

    _backend_pid()
    runs: list[int] = []

    def read() -> None:
        runs.append(1)
        fetch_one("SET LOCAL statement_timeout = 1; SELECT pg_sleep(0.05)")  # cancelled: an OperationalError

    with pytest.raises(OperationalError):
        checked_by_first_statement(read)
    assert len(runs) == 1


@pytest.mark.django_db(transaction=True)
def test_an_api_key_is_checked_on_a_connection_the_database_dropped() -> None:
    from memory_app.services.api_keys import api_key_authenticate, api_key_issue
    from tests.factories import TenantFactory

    issued = api_key_issue(tenant=TenantFactory(), name="k")
    _drop_this_connection()
    connection.health_check_done = True
    found = api_key_authenticate(raw_key=issued.raw_key)
    assert found is not None and found.pk == issued.api_key.pk


def _prepared_statements() -> list[str]:
    return [row[0] for row in fetch_all("SELECT statement FROM pg_prepared_statements")]


PREPARED_READ = (
    "SELECT id, text FROM memory_app_memory WHERE tenant_id = %s AND id = ANY(%s::bigint[]) ORDER BY id"
)


@pytest.mark.django_db
def test_a_prepared_read_gives_the_rows_of_the_same_read_unprepared_and_is_planned_once() -> None:
    first, second = MemoryFactory(), MemoryFactory()
    params = [first.tenant_id, [first.pk, second.pk]]
    for _ in range(7):  # past the five custom plans PostgreSQL makes before it tries a generic one
        assert fetch_all_prepared(PREPARED_READ, params) == fetch_all(PREPARED_READ, params)
    [(generic, custom)] = fetch_all(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = %s",
        [PREPARED_READ.replace("%s", "$1", 1).replace("%s", "$2", 1)],
    )
    assert custom + generic == 7 and generic >= 1


@pytest.mark.django_db
def test_a_prepared_read_fails_as_django_errors_do_and_leaves_no_other_statement_prepared() -> None:
    from django.db import ProgrammingError

    with pytest.raises(ProgrammingError), transaction.atomic():
        fetch_all_prepared("SELECT no_such_column FROM memory_app_memory WHERE tenant_id = %s", [1])
    fetch_all("SELECT id FROM memory_app_memory WHERE tenant_id = %s AND id = %s", [1, 1])
    prepared = _prepared_statements()
    assert not [
        s
        for s in prepared
        if "no_such_column" in s
        or s.startswith("SELECT id FROM memory_app_memory WHERE tenant_id = $1 AND id")
    ]


@pytest.mark.django_db
def test_where_django_logs_queries_a_prepared_read_runs_unprepared_and_is_logged() -> None:
    memory = MemoryFactory()
    logged = f"{PREPARED_READ} -- logged"
    with CaptureQueriesContext(connection) as queries:
        rows = fetch_all_prepared(logged, [memory.tenant_id, [memory.pk]])
    assert rows == [(memory.pk, memory.text)]
    assert [q["sql"] for q in queries.captured_queries if "-- logged" in q["sql"]]
    assert not [s for s in _prepared_statements() if "-- logged" in s]


@pytest.mark.django_db
def test_with_prepared_statements_off_a_prepared_read_runs_unprepared(settings) -> None:  # type: ignore[no-untyped-def]
    settings.DATABASE_PREPARED_STATEMENTS = False
    memory = MemoryFactory()
    unprepared = f"{PREPARED_READ} -- off"
    assert fetch_all_prepared(unprepared, [memory.tenant_id, [memory.pk]]) == [(memory.pk, memory.text)]
    assert not [s for s in _prepared_statements() if "-- off" in s]


@pytest.mark.django_db(transaction=True)
def test_a_prepared_read_first_in_a_request_replaces_a_connection_the_database_dropped() -> None:
    memory = MemoryFactory()
    _drop_this_connection()
    connection.health_check_done = False  # what each request's start sets
    assert fetch_all_prepared(PREPARED_READ, [memory.tenant_id, [memory.pk]]) == [(memory.pk, memory.text)]


@pytest.mark.django_db
def test_a_prepared_read_gives_timestamps_in_the_zone_django_reads_them_in_after_it_changes(settings) -> None:  # type: ignore[no-untyped-def]
    memory = MemoryFactory()
    read = "SELECT created_at FROM memory_app_memory WHERE tenant_id = %s AND id = ANY(%s::bigint[])"
    params = [memory.tenant_id, [memory.pk]]
    fetch_all_prepared(read, params)  # the connection is open, its loader set for the zone at hand
    settings.USE_TZ = False  # Django now reads naive datetimes, with a loader on each cursor
    [(unprepared,)] = fetch_all(read, params)
    [(prepared,)] = fetch_all_prepared(read, params)
    assert unprepared.tzinfo is None
    assert (prepared, prepared.tzinfo) == (unprepared, unprepared.tzinfo)
