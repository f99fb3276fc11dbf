from __future__ import annotations

from typing import Any

import anyio
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.api.auth import TenantPrincipal
from memory_app.mcp.server import build_server
from memory_app.models import Tenant


class Command(BaseCommand):
    help = (
        "Serve the MCP server over stdio for one tenant (for a local agent: Claude Desktop, an IDE). "
        "Over HTTP it is served at /mcp by project.asgi with API keys instead."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--tenant", metavar="SLUG", required=True, help="tenant slug (manage.py create_tenant)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # only the stdio transport needs it
        from mcp.server.stdio import stdio_server

        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant with slug {options['tenant']!r}")
        if not tenant.is_active:
            raise CommandError(f"tenant {tenant.slug!r} is deactivated")
        server = build_server(principal=TenantPrincipal(tenant=tenant, api_key=None))
        # Before the server reads `initialize`: a client's first tool call must not load the model.
        from project.warmup import embedding_warmup, gc_tune

        embedding_warmup()
        gc_tune()

        async def serve() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(serve)
