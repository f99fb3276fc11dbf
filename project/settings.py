"""Django's settings: the infrastructure's own values, and the service's knobs, all parsed strictly.

Every environment variable is declared once: the infrastructure's in project/variables.py, the
service's tuning knobs on their domain's object in memory_app/conf/. This module reads both
(`.read()`, `settings_from_env`): a bad value stops start-up with a message naming the variable. The
README's and docs/OPERATIONS.md's settings tables are generated from the same declarations.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from memory_app.conf import settings_from_env
from project import variables
from project.database import CITUS_ENGINE, database_config
from project.env import load_env_file

BASE_DIR = Path(__file__).resolve().parent.parent
# Values from the environment win over the file; ENV_FILE="" disables it.
load_env_file(os.environ.get(variables.ENV_FILE.name, str(BASE_DIR / variables.ENV_FILE.default)))

# --- Core -----------------------------------------------------------------------------------
DEBUG = variables.DEBUG.read()
SECRET_KEY = variables.SECRET_KEY.read()
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG is off")
    SECRET_KEY = "insecure-development-key-only-for-debug"
ALLOWED_HOSTS = variables.ALLOWED_HOSTS.read(default=["*"] if DEBUG else variables.ALLOWED_HOSTS.default)
CSRF_TRUSTED_ORIGINS = variables.CSRF_TRUSTED_ORIGINS.read()
# The MCP HTTP transport's DNS-rebinding protection (memory_app/mcp/http.py): a Host not listed is a
# 421, an Origin header not listed a 403 (clients that send no Origin, i.e. not browsers, pass).
# Exact names, any port ("host:8001" for one port); by default the exact names of ALLOWED_HOSTS.
MCP_ALLOWED_HOSTS = variables.MCP_ALLOWED_HOSTS.read(
    default=[h for h in ALLOWED_HOSTS if h != "*" and not h.startswith(".")]
    or variables.MCP_ALLOWED_HOSTS.default
)
MCP_ALLOWED_ORIGINS = variables.MCP_ALLOWED_ORIGINS.read()
# After warm-up a server process (gunicorn worker, MCP server) freezes its start-up objects and runs
# Python's youngest collection after this many allocations instead of 700 (project/warmup.gc_tune);
# 0 keeps Python's defaults.
SERVER_GC_THRESHOLD = variables.SERVER_GC_THRESHOLD.read()

# --- Transport security ----------------------------------------------------------------------
# Secure by default outside DEBUG (`manage.py check --deploy --fail-level WARNING` passes with only
# DEBUG=false, SECRET_KEY and ALLOWED_HOSTS set); each variable relaxes one of them explicitly, for
# instance SECURE_SSL_REDIRECT=false when a TLS-terminating proxy already redirects.
_PRODUCTION = not DEBUG
SECURE_SSL_REDIRECT = variables.SECURE_SSL_REDIRECT.read(default=_PRODUCTION)
# The liveness and readiness probes of a container or load balancer speak plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^api/v1/health(/|$)"]
SESSION_COOKIE_SECURE = variables.SESSION_COOKIE_SECURE.read(default=_PRODUCTION)
CSRF_COOKIE_SECURE = variables.CSRF_COOKIE_SECURE.read(default=_PRODUCTION)
SECURE_HSTS_SECONDS = variables.SECURE_HSTS_SECONDS.read(
    default=variables.SECURE_HSTS_SECONDS.default if _PRODUCTION else 0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = variables.SECURE_HSTS_INCLUDE_SUBDOMAINS.read(default=_PRODUCTION)
SECURE_HSTS_PRELOAD = variables.SECURE_HSTS_PRELOAD.read(default=_PRODUCTION)
# Behind a proxy that terminates TLS: the header it sets, as "HEADER,value" (for example
# "HTTP_X_FORWARDED_PROTO,https"). Unset by default: trusting it without such a proxy in front
# would let any client claim HTTPS.
_proxy_header = variables.SECURE_PROXY_SSL_HEADER.read()
if _proxy_header and len(_proxy_header) != 2:
    raise ImproperlyConfigured(
        'SECURE_PROXY_SSL_HEADER must be "HEADER,value", e.g. HTTP_X_FORWARDED_PROTO,https'
    )
SECURE_PROXY_SSL_HEADER = (_proxy_header[0], _proxy_header[1]) if _proxy_header else None

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "memory_app.apps.MemoryAppConfig",
    "memory_eval.apps.MemoryEvalConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Size limit, path ids and JSON error bodies for /api/ (memory_app/api/guard.py).
    "memory_app.api.guard.ApiGuardMiddleware",
    # Serves collected static files (the admin's) from gunicorn in the container deployment.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Read-your-writes: a request that wrote reads from the primary (memory_app/db_routing.py).
    "memory_app.db_routing.ReadYourWritesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"
ASGI_APPLICATION = "project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = variables.DATABASE_URL.read()
EMBEDDED_PG_DIR = Path(
    variables.EMBEDDED_PG_DIR.read(default=str(BASE_DIR / variables.EMBEDDED_PG_DIR.default))
)
# initdb's 128MB holds a fraction of a 100 k-memory scope's table and indexes (~600 MB): each search
# then reads its pages through the OS cache (docs/PERFORMANCE.md). Only the embedded server: a
# DATABASE_URL server is its operator's to size.
EMBEDDED_PG_SHARED_BUFFERS = variables.EMBEDDED_PG_SHARED_BUFFERS.read()
DATABASES = {
    "default": database_config(
        url=DATABASE_URL,
        data_dir=EMBEDDED_PG_DIR,
        check_pgvector=variables.PGVECTOR_CHECK.read(),
        shared_buffers=EMBEDDED_PG_SHARED_BUFFERS,
    )
}
# A Citus coordinator is recognised by the start-up check above; with PGVECTOR_CHECK off, this says
# so instead (project/citus_backend: the SQL Django writes in the forms Citus routes).
if variables.DATABASE_CITUS.read() and DATABASE_URL:
    DATABASES["default"]["ENGINE"] = CITUS_ENGINE
DATABASE_PREPARED_STATEMENTS = variables.DATABASE_PREPARED_STATEMENTS.read()
# Read replicas (streaming standbys of DATABASES["default"]): the read-only API paths use a healthy
# one (memory_app/db_routing.py); a replica further behind than the lag limit, or down, is skipped.
DATABASE_REPLICA_URLS = variables.DATABASE_REPLICA_URLS.read()
DATABASE_REPLICA_ALIASES: list[str] = []
for _number, _url in enumerate(DATABASE_REPLICA_URLS):
    _alias = f"replica_{_number}"
    DATABASES[_alias] = database_config(url=_url, data_dir=EMBEDDED_PG_DIR, check_pgvector=False)
    # Tests: the replica serves the primary's test database; Django neither creates nor flushes it.
    DATABASES[_alias]["TEST"] = {"MIRROR": "default"}
    # A replica that is down must cost a read little: it is skipped, not waited for.
    DATABASES[_alias].setdefault("OPTIONS", {}).setdefault("connect_timeout", 2)
    DATABASE_REPLICA_ALIASES.append(_alias)
DATABASE_REPLICA_MAX_LAG_SECONDS = variables.DATABASE_REPLICA_MAX_LAG_SECONDS.read()
# How long a replica's measured state (lag, up or down) is reused before it is measured again.
DATABASE_REPLICA_CHECK_SECONDS = variables.DATABASE_REPLICA_CHECK_SECONDS.read()
DATABASE_ROUTERS = ["memory_app.db_routing.ReplicaRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- I18N, static ---------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# --- REST API -------------------------------------------------------------------------------
API_PAGE_SIZE = variables.API_PAGE_SIZE.read()
API_MAX_PAGE_SIZE = variables.API_MAX_PAGE_SIZE.read()
# The largest request body the API takes (a 413 with a JSON error above it). Large enough for a
# session append of several MB; Django's own form-data limit follows it.
API_MAX_REQUEST_BYTES = variables.API_MAX_REQUEST_BYTES.read()
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_REQUEST_BYTES
# JSON nested deeper than this is a 400 (real payloads are a few levels deep).
API_MAX_JSON_DEPTH = variables.API_MAX_JSON_DEPTH.read()
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["memory_app.api.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [
        "memory_app.api.auth.HasTenant",
        "memory_app.api.strict.StrictQueryParams",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memory_app.api.strict.DepthLimitedJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "memory_app.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["memory_app.api.throttling.ApiKeyRateThrottle"],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Agent memory API",
    "DESCRIPTION": "Store and recall memories for AI agents.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "memory_app.api.schema.add_error_responses",
        "memory_app.api.schema.add_examples",
    ],
}


# --- Celery ---------------------------------------------------------------------------------
CELERY_BROKER_URL = variables.CELERY_BROKER_URL.read()
# Without a broker (the embedded default) tasks run inline in the calling process.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_RESULT_BACKEND = variables.CELERY_RESULT_BACKEND.read() or None
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"

# --- Background work and operations (ops: tasks, periodic jobs, compaction) ------------------
CELERY_TASK_DEFAULT_QUEUE = variables.CELERY_TASK_DEFAULT_QUEUE.read()
CELERY_TASK_SOFT_TIME_LIMIT = variables.TASK_SOFT_TIME_LIMIT_SECONDS.read()
# The hard limit kills the worker child; the soft one lets a job save its cursor and re-queue itself.
CELERY_TASK_TIME_LIMIT = variables.TASK_TIME_LIMIT_SECONDS.read()
if CELERY_TASK_TIME_LIMIT <= CELERY_TASK_SOFT_TIME_LIMIT:
    raise ImproperlyConfigured("TASK_TIME_LIMIT_SECONDS must be greater than TASK_SOFT_TIME_LIMIT_SECONDS")
TASK_MAX_RETRIES = variables.TASK_MAX_RETRIES.read()
# Tasks are acknowledged after they finish (acks_late) and a task whose worker died is rejected back
# to the queue (reject_on_worker_lost). Redis hands an unacknowledged message to another worker once
# this long has passed since delivery (a whole worker host lost), so it must exceed the hard time
# limit, or a long task still running would be delivered twice (the job claim makes that harmless).
CELERY_VISIBILITY_TIMEOUT_SECONDS = variables.CELERY_VISIBILITY_TIMEOUT_SECONDS.read(
    default=CELERY_TASK_TIME_LIMIT + 300
)
if CELERY_VISIBILITY_TIMEOUT_SECONDS <= CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured(
        "CELERY_VISIBILITY_TIMEOUT_SECONDS must be greater than TASK_TIME_LIMIT_SECONDS"
    )
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT_SECONDS}
# Publishing a task to a dead broker gives up after ~1 s instead of blocking the request or command.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.3}

# --- The service's knobs (memory_app/conf/: one declaration per field of a domain's object) ------
globals().update(settings_from_env(base_dir=BASE_DIR))

# --- Quota counters -------------------------------------------------------------------------
# Where the counters live: Redis when a URL is given, else a table of the database
# (memory_app_quota_cache, created by migration 0013).
QUOTA_REDIS_URL = variables.QUOTA_REDIS_URL.read()
QUOTA_CACHE_TABLE = "memory_app_quota_cache"
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "quota": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": QUOTA_REDIS_URL,
            "KEY_PREFIX": "quota",
        }
        if QUOTA_REDIS_URL
        else {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": QUOTA_CACHE_TABLE,
            # Past this many rows Django culls a third of them, live counters included: room for
            # one counter per active key and minute and one per tenant.
            "OPTIONS": {"MAX_ENTRIES": 100_000},
        }
    ),
}

# --- Health -----------------------------------------------------------------------------------
# Each readiness check (database, broker) gets this long; they run concurrently, so a dead broker
# costs /api/v1/health/ready this much, never a connection timeout.
HEALTH_CHECK_TIMEOUT_SECONDS = variables.HEALTH_CHECK_TIMEOUT_SECONDS.read()

# --- Logging --------------------------------------------------------------------------------
LOG_LEVEL = variables.LOG_LEVEL.read().upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "memory_app": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "project": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
    },
}

if not DEBUG:
    SESSION_COOKIE_HTTPONLY = True
    CSRF_COOKIE_HTTPONLY = False
    X_FRAME_OPTIONS = "DENY"
