"""The C-parsing timestamptz loader gives what Django's own loader gives."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import DataError, connection
from django.db.backends.postgresql.psycopg_any import BaseTzLoader
from django.utils import timezone

from memory_app.db import fetch_all
from memory_app.db.timestamps import _loader_for

pytestmark = pytest.mark.django_db

VALUES = [
    "2026-11-27 23:14:32.123456+00",
    "2026-11-27 23:14:32.5+00",
    "2026-11-27 23:14:32+00",
    "2026-11-27 23:14:32.000001+05:30",
    "0001-01-01 00:00:00+00",
    "9999-12-31 23:59:59.999999+00",
]


def _django_loader(zone):  # type: ignore[no-untyped-def]
    class Django(BaseTzLoader):
        timezone = zone

    return Django


@pytest.mark.parametrize("zone", [UTC, None, timezone.get_fixed_timezone(90)])
@pytest.mark.parametrize("text", VALUES)
def test_a_timestamp_reads_as_djangos_loader_reads_it(text: str, zone) -> None:  # type: ignore[no-untyped-def]
    connection.ensure_connection()
    ours = _loader_for(zone)(1184, connection.connection).load(text.encode())
    theirs = _django_loader(zone)(1184, connection.connection).load(text.encode())
    assert (ours, ours.tzinfo, ours.utcoffset()) == (theirs, theirs.tzinfo, theirs.utcoffset())


@pytest.mark.parametrize("text", ["infinity", "2026-11-27 23:14:32+00 BC"])
def test_what_the_fast_loader_cannot_parse_fails_as_djangos_loader_fails(text: str) -> None:
    connection.ensure_connection()
    with pytest.raises(Exception) as ours:
        _loader_for(UTC)(1184, connection.connection).load(text.encode())
    with pytest.raises(Exception) as theirs:
        _django_loader(UTC)(1184, connection.connection).load(text.encode())
    assert type(ours.value) is type(theirs.value)


def test_connections_read_timestamps_with_the_fast_loader_and_the_connections_zone() -> None:
    [(value, none)] = fetch_all("SELECT '2026-11-27 23:14:32.25+00'::timestamptz, NULL::timestamptz")
    assert (
        value == datetime(2026, 11, 27, 23, 14, 32, 250000, tzinfo=UTC)
        and value.tzinfo is connection.timezone
    )
    assert none is None
    assert connection.connection.adapters.get_loader(1184, 0) is _loader_for(connection.timezone)


def test_an_out_of_range_timestamp_is_still_a_data_error() -> None:
    with pytest.raises(DataError):
        fetch_all("SELECT 'infinity'::timestamptz")
