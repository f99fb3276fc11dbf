"""Shared bits of the operations commands."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.models import Tenant


def add_tenant_argument(parser: CommandParser, *, required: bool = False) -> None:
    parser.add_argument(
        "--tenant", metavar="SLUG", required=required, help="one tenant (default: every active tenant)"
    )


def add_apply_argument(parser: CommandParser, *, deprecated_dry_run: bool = False) -> None:
    """`--apply`: every command that changes data is a dry run without it. `deprecated_dry_run`
    keeps the old `--dry-run` flag of a command that used to act by default (still a dry run)."""
    parser.add_argument("--apply", action="store_true", help="make the changes (default: dry run)")
    if deprecated_dry_run:
        parser.add_argument("--dry-run", action="store_true", help="deprecated: a dry run is the default")


def applying(command: BaseCommand, options: dict[str, Any]) -> bool:
    """Whether to act; warns once about the deprecated `--dry-run` (which wins over --apply)."""
    if options.get("dry_run"):
        command.stderr.write("--dry-run is deprecated: a dry run is the default; --apply makes the changes.")
        return False
    return bool(options["apply"])


def tenant_or_none(slug: str | None) -> Tenant | None:
    if not slug:
        return None
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise CommandError(f"no tenant with slug {slug!r}")
    return tenant


def tenants(slug: str | None) -> list[Tenant]:
    one = tenant_or_none(slug)
    return [one] if one is not None else list(Tenant.objects.filter(is_active=True).order_by("pk"))


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"
