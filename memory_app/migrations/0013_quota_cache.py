"""The database table of the quota counters (Django's cache table), used when QUOTA_REDIS_URL is
not set: per-key request counts and per-tenant memory counts (services/quotas.py)."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.db import migrations

TABLE = "memory_app_quota_cache"


def create(apps: Any, schema_editor: Any) -> None:
    call_command("createcachetable", TABLE, database=schema_editor.connection.alias, verbosity=0)


def drop(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute(f'DROP TABLE IF EXISTS "{TABLE}"')


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0012_memory_fillfactor")]

    operations = [migrations.RunPython(create, drop)]
