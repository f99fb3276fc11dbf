from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory_app.embeddings.shared import serve


class Command(BaseCommand):
    help = (
        "Serve the local embedding model to the workers of one server over a Unix socket, batching "
        "their texts into shared forward passes. gunicorn's master starts it (project/gunicorn.conf.py); "
        "it exits when its parent does."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--socket", required=True, help="path of the Unix socket to listen on")

    def handle(self, *args: Any, **options: Any) -> None:
        serve(options["socket"], exit_with_parent=True)
