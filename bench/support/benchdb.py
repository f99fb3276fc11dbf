"""What every database benchmark shares: a log line on stderr and a bench database of its own.

Benchmarks load hundreds of thousands of rows, so each works in its own database on the same
server (embedded or DATABASE_URL) and never touches the service's or the tests' data.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def log(message: str) -> None:
    """Progress on stderr, so with --json the last line of stdout stays the JSON object."""
    print(message, file=sys.stderr, flush=True)


def use_database(name: str, *, fresh: bool = False, migrate: bool = False) -> None:
    """Point Django at the bench database `name`, created on the same server when missing.

    `fresh` drops it first (an interrupted load never leaves a table without its indexes);
    `migrate` applies the migrations to it.
    """
    import psycopg
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    from memory_app.selectors.search.beside import beside_close
    from memory_app.selectors.search.query import search_caches_forget

    # A search's pool threads hold connections of their own, to the database they first met, and
    # the process remembers scope sizes and BM25 statistics by tenant and user: the same scope
    # names another scope in the next database.
    beside_close()
    search_caches_forget()
    config = settings.DATABASES["default"]
    params = {"dbname": "postgres", "user": config["USER"], "host": config["HOST"], "port": config["PORT"]}
    connections.close_all()
    with psycopg.connect(**{k: v for k, v in params.items() if v}, autocommit=True) as conn:
        if fresh:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    config["NAME"] = name
    for alias in list(connections):
        del connections[alias]
    connections.settings = connections.configure_settings(settings.DATABASES)
    if migrate:
        call_command("migrate", verbosity=0)


@contextmanager
def memory_indexes_dropped(
    raw: Any,
    *,
    log: Callable[[str], None] = log,
    maintenance_work_mem: str = "1GB",
    build_seconds: dict[str, float] | None = None,
) -> Iterator[Any]:
    """A cursor on `raw` (a psycopg connection) with every index of the memory table dropped that no
    constraint owns; afterwards each is built again, timed (into `build_seconds` when given). One
    build after a COPY is far cheaper than keeping the indexes up to date row by row."""
    with raw.cursor() as cur:
        cur.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memory_app_memory' "
            "AND indexname NOT LIKE '%%pkey' AND indexname NOT IN "
            "(SELECT conname FROM pg_constraint WHERE conrelid = 'memory_app_memory'::regclass)"
        )
        definitions = dict(cur.fetchall())
        for name in definitions:
            cur.execute(f"DROP INDEX {name}")
        raw.commit()
        yield cur
        cur.execute("SELECT set_config('maintenance_work_mem', %s, false)", [maintenance_work_mem])
        for name, definition in definitions.items():
            started = time.perf_counter()
            cur.execute(definition)
            raw.commit()
            took = time.perf_counter() - started
            if build_seconds is not None:
                build_seconds[name] = round(took, 1)
            log(f"  built {name} in {took:.0f} s")
