"""What every database benchmark shares: a log line on stderr and a bench database of its own.

Benchmarks load hundreds of thousands of rows, so each works in its own database on the same
server (embedded or DATABASE_URL) and never touches the service's or the tests' data.
"""

from __future__ import annotations

import sys


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
