"""Import a JSONL export into a tenant, remapping every id."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError, transaction
from tqdm import tqdm

from memory_app.errors import ApplicationError
from memory_app.models import Tenant
from memory_app.services.api_keys import tenant_create
from memory_app.services.transfer import ImportReport, tenant_import


class _DryRun(Exception):
    pass


def _summary(report: ImportReport) -> str:
    done = ", ".join(f"{n} {kind}" for kind, n in report.imported.items())
    skipped = sum(report.skipped.values())
    if not skipped:
        return done
    already = ", ".join(f"{n} {kind}" for kind, n in report.skipped.items() if n)
    return f"{done} (skipped, already there: {already})"


class Command(BaseCommand):
    help = (
        "Import a file written by export_memories (or GET /api/v1/export) into a tenant (created if "
        "--create-tenant): memories with lineage, review state, procedures, sessions, agent profiles. "
        "Every id is remapped, lineage and undo included; records the tenant already holds are skipped. "
        "All or nothing. Dry run by default: the import runs inside a transaction that is rolled back, "
        "so every error shows; --apply commits it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="JSONL file (- for stdin)")
        parser.add_argument("--tenant", metavar="SLUG", required=True, help="tenant to import into")
        parser.add_argument("--create-tenant", action="store_true", help="create the tenant if missing")
        parser.add_argument("--apply", action="store_true", help="commit the import (default: dry run)")

    def _records(self, path: str) -> Iterator[dict[str, Any]]:
        stream = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
        try:
            for number, line in enumerate(tqdm(stream, desc="importing", unit="line", disable=None), 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise CommandError(f"line {number}: not JSON ({exc})") from exc
        finally:
            if stream is not sys.stdin:
                stream.close()

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["tenant"]
        try:
            with transaction.atomic():
                tenant = Tenant.objects.filter(slug=slug).first()
                if tenant is None:
                    if not options["create_tenant"]:
                        raise CommandError(f"no tenant {slug!r} (use --create-tenant)")
                    tenant = tenant_create(name=slug, slug=slug)
                report = tenant_import(tenant=tenant, records=self._records(options["path"]), apply=True)
                summary = _summary(report)
                if not options["apply"]:
                    raise _DryRun(summary)
        except _DryRun as dry:
            self.stdout.write(
                f"dry run: would import {dry.args[0]} into {slug}; nothing written (use --apply)"
            )
            return
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        except IntegrityError as exc:
            raise CommandError(f"import conflicts with existing rows of {slug}: {exc}") from exc
        self.stdout.write(f"imported {summary} into {slug}")
