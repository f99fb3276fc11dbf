# The service image: web (gunicorn), mcp (uvicorn, bin/serve-mcp), Celery worker and beat all run
# from it (docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    DJANGO_SETTINGS_MODULE=project.settings

WORKDIR /app
RUN useradd --create-home --uid 1000 app

# The CPU build of torch first, so sentence-transformers does not pull a multi-GB CUDA build.
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0"
COPY pyproject.toml ./
RUN python - <<'PY' > /tmp/requirements.txt && pip install -r /tmp/requirements.txt
import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))
PY

COPY --chown=app:app . .
# Static files for the admin, served by whitenoise from gunicorn. A build-time key only.
RUN SECRET_KEY=collectstatic-only DATABASE_URL=postgres://unused@localhost/unused PGVECTOR_CHECK=false \
    python manage.py collectstatic --noinput

USER app
# 8000: the REST API and admin (gunicorn); 8001: the MCP server (`bin/serve-mcp`, another command).
EXPOSE 8000 8001
# gthread workers, threads and timeouts: project/gunicorn.conf.py (WEB_CONCURRENCY, WEB_THREADS;
# docs/OPERATIONS.md "Web server"); each worker loads the model before it takes a request (project/wsgi.py).
CMD ["gunicorn", "-c", "project/gunicorn.conf.py", "project.wsgi:application"]
