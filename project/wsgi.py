"""WSGI entry point: the REST API and the admin, under gunicorn (project/gunicorn.conf.py) or
runserver (bin/serve). The model and the judge's tables load here, before the server takes its first
request (project/warmup.py), as project/asgi.py does for the MCP server."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_wsgi_application()

from project.warmup import embedding_warmup, gc_tune  # noqa: E402  (needs the apps loaded above)

embedding_warmup()
gc_tune()
