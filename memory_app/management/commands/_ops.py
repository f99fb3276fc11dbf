"""Shared bits of the operations commands."""

from __future__ import annotations

from django.core.management.base import CommandError, CommandParser

from memory_app.models import Tenant


def add_tenant_argument(parser: CommandParser, *, required: bool = False) -> None:
    parser.add_argument(
        "--tenant", metavar="SLUG", required=required, help="one tenant (default: every active tenant)"
    )


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
