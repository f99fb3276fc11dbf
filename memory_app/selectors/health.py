"""What /api/v1/health reports: database, pgvector and broker status."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import connection

logger = logging.getLogger(__name__)


def database_status() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            server_version = cursor.fetchone()[0]
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
    except Exception as exc:  # the point is to report it, not to raise
        logger.warning("health: database unavailable: %s", exc)
        return {"status": "error", "error": str(exc)}
    return {
        "status": "ok",
        "postgresql_version": server_version,
        "pgvector_version": row[0] if row else None,
        "embedded": not settings.DATABASE_URL,
    }


def broker_status() -> dict[str, Any]:
    url = settings.CELERY_BROKER_URL
    if not url:
        return {"status": "inline", "detail": "no CELERY_BROKER_URL: tasks run inline"}
    try:
        from project.celery import app

        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:
        logger.warning("health: broker unavailable: %s", exc)
        return {"status": "error", "error": str(exc)}
    return {"status": "ok"}


def health_report() -> dict[str, Any]:
    database = database_status()
    broker = broker_status()
    ok = database["status"] == "ok" and broker["status"] in ("ok", "inline")
    return {
        "status": "ok" if ok else "degraded",
        "database": database,
        "broker": broker,
        "embedding": {
            "provider": settings.EMBEDDING_PROVIDER,
            "model": settings.EMBEDDING_MODEL,
            "dimensions": settings.EMBEDDING_DIMENSIONS,
        },
    }
