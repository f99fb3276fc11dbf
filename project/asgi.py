"""ASGI entry point: Django, with the MCP server's streamable HTTP transport at /mcp.

Served by bin/serve-mcp (uvicorn, port 8001) beside the REST API's WSGI server (project/wsgi.py
under gunicorn or runserver, port 8000), which does not serve /mcp. This app answers the REST API
too, but Django runs sync views under ASGI one at a time per process, so REST traffic belongs on
the WSGI server: docs/OPERATIONS.md "MCP over HTTP".
"""

import os
from typing import cast

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django_application = get_asgi_application()

from memory_app.mcp.http import ASGIApp, with_mcp  # noqa: E402  (needs the apps loaded above)
from project.warmup import embedding_warmup, gc_tune  # noqa: E402

# Django's handler is typed for a dict scope, the SDK's apps for any mutable mapping; ASGI servers
# always pass a dict.
application = with_mcp(cast(ASGIApp, django_application))
embedding_warmup()
gc_tune()
