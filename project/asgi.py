"""ASGI entry point: Django, with the MCP server's streamable HTTP transport at /mcp.

Serve with `uvicorn project.asgi:application` (or `gunicorn project.asgi:application -k
uvicorn_worker.UvicornWorker`); the WSGI entry point (project/wsgi.py) serves the REST API without /mcp.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django_application = get_asgi_application()

from memory_app.mcp.http import with_mcp  # noqa: E402  (needs the apps loaded above)

application = with_mcp(django_application)
