"""The infrastructure's environment variables, each declared once (project/env.py `Setting`).

Django's own and the infrastructure's values: debug and secrets, HTTP security, the database and
its replicas, the API's request limits, Celery, health checks, logging, and the variables that
scripts and server configs read themselves (`read_by`). The service's tuning knobs are declared
on the fields of their domain's object in memory_app/conf/. settings.py reads every one of these
through `.read()`; the docs tables are generated from them (`manage.py settings_doc --write`).
"""

from __future__ import annotations

from typing import Any

from project.env import OPERATIONS, Setting, choice, flag, integer, names, number, text

_OPS = {"table": OPERATIONS}

# --- Core -----------------------------------------------------------------------------------
# Read before every other variable (settings.py), with its own rule: set but empty disables the file.
ENV_FILE = text(
    "ENV_FILE",
    ".env",
    "file of `KEY=VALUE` defaults (written by `bin/serve`); empty disables it",
    read_by="settings.py, before the others",
    **_OPS,
)
DEBUG = flag(
    "DEBUG",
    False,
    "Django debug mode",
    default_doc="`false` (`true` in the `.env` that `bin/serve` writes)",
    **_OPS,
)
SECRET_KEY = text("SECRET_KEY", "", "required when `DEBUG` is off", default_doc="none", **_OPS)
ALLOWED_HOSTS = names(
    "ALLOWED_HOSTS",
    ["127.0.0.1", "localhost"],
    "comma-separated host names",
    default_doc="`127.0.0.1,localhost` (`*` in debug)",
    **_OPS,
)
CSRF_TRUSTED_ORIGINS = names(
    "CSRF_TRUSTED_ORIGINS", [], "comma-separated origins for the admin behind a proxy", **_OPS
)
MCP_ALLOWED_HOSTS = names(
    "MCP_ALLOWED_HOSTS",
    ["127.0.0.1", "localhost"],
    "Host headers `/mcp` accepts, at any port (`name:port` for one); another is a 421 (DNS-rebinding "
    "protection)",
    default_doc="the exact names of `ALLOWED_HOSTS` (`127.0.0.1,localhost` if none)",
    **_OPS,
)
MCP_ALLOWED_ORIGINS = names(
    "MCP_ALLOWED_ORIGINS",
    [],
    "browser origins `/mcp` accepts (`https://app.example.com`, or `scheme://host:*`); a request with "
    "another `Origin` is a 403, one without passes",
    **_OPS,
)
SERVER_GC_THRESHOLD = integer(
    "SERVER_GC_THRESHOLD",
    10_000,
    0,
    10_000_000,
    "after warm-up a server process (gunicorn worker, MCP server) freezes its start-up objects and runs "
    "Python's youngest collection after this many allocations (Python: 700); `0` keeps Python's defaults",
    **_OPS,
)

# --- Transport security (secure by default outside DEBUG) ------------------------------------
_IN_PRODUCTION = "`true` (`false` in debug)"
SECURE_SSL_REDIRECT = flag(
    "SECURE_SSL_REDIRECT",
    True,
    "redirect HTTP to HTTPS (`/api/v1/health*` exempt, for probes); `false` when a TLS-terminating "
    "proxy redirects already",
    default_doc=_IN_PRODUCTION,
    **_OPS,
)
SECURE_PROXY_SSL_HEADER = names(
    "SECURE_PROXY_SSL_HEADER",
    [],
    "behind a TLS-terminating proxy: `HEADER,value` it sets, e.g. `HTTP_X_FORWARDED_PROTO,https` "
    "(never set it without such a proxy)",
    default_doc="unset",
    **_OPS,
)
SESSION_COOKIE_SECURE = flag(
    "SESSION_COOKIE_SECURE", True, "session cookie sent over HTTPS only", default_doc=_IN_PRODUCTION, **_OPS
)
CSRF_COOKIE_SECURE = flag(
    "CSRF_COOKIE_SECURE", True, "CSRF cookie sent over HTTPS only", default_doc=_IN_PRODUCTION, **_OPS
)
SECURE_HSTS_SECONDS = integer(
    "SECURE_HSTS_SECONDS",
    31_536_000,
    0,
    None,
    "Strict-Transport-Security max-age",
    default_doc="`31536000` (`0` in debug)",
    **_OPS,
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = flag(
    "SECURE_HSTS_INCLUDE_SUBDOMAINS", True, "HSTS `includeSubDomains`", default_doc=_IN_PRODUCTION, **_OPS
)
SECURE_HSTS_PRELOAD = flag("SECURE_HSTS_PRELOAD", True, "HSTS `preload`", default_doc=_IN_PRODUCTION, **_OPS)

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = text(
    "DATABASE_URL",
    "",
    "`postgres://user:pass@host:5432/db`; the server must have pgvector >= 0.8 or start-up stops",
    default_doc="empty → embedded server",
    **_OPS,
)
EMBEDDED_PG_DIR = text(
    "EMBEDDED_PG_DIR", "var/pgdata", "data folder of the embedded server (relative to the checkout)", **_OPS
)
EMBEDDED_PG_SHARED_BUFFERS = text(
    "EMBEDDED_PG_SHARED_BUFFERS",
    "1GB",
    "the embedded server's `shared_buffers` (written to `memory_service.conf` in its data folder, "
    "applied when it starts; empty keeps initdb's 128MB)",
    **_OPS,
)
PGVECTOR_CHECK = flag(
    "PGVECTOR_CHECK",
    True,
    "check pgvector's version at start-up (with `DATABASE_URL`); the same check recognises a Citus "
    "coordinator (the `citus` extension) and picks the Citus backend (docs/SCALING.md)",
    **_OPS,
)
DATABASE_CITUS = flag(
    "DATABASE_CITUS",
    False,
    "with `PGVECTOR_CHECK=false`: `true` says `DATABASE_URL` is a Citus coordinator (the check would "
    "have recognised it)",
    **_OPS,
)
DATABASE_PREPARED_STATEMENTS = flag(
    "DATABASE_PREPARED_STATEMENTS",
    True,
    "prepare on each connection the few statements every request runs with one plan (the API key's "
    "and the embedding cache's lookups, a search's kept rows, a store's same-text check); `false` "
    "behind a pooler that does not keep a session's prepared statements",
    **_OPS,
)
DATABASE_REPLICA_URLS = names(
    "DATABASE_REPLICA_URLS",
    [],
    "comma-separated `postgres://` URLs of streaming hot standbys of the primary; search, context, "
    "lists, stats and the review queue read from a healthy one (`consistency=strong` on a read, or a "
    "read after a write in the same request, uses the primary). docs/SCALING.md",
    default_doc="empty → no replica",
    **_OPS,
)
DATABASE_REPLICA_MAX_LAG_SECONDS = number(
    "DATABASE_REPLICA_MAX_LAG_SECONDS",
    5.0,
    0.0,
    3600.0,
    "a replica further behind the primary than this (or down) is skipped for the primary; readiness "
    "shows each replica's measured lag",
    **_OPS,
)
DATABASE_REPLICA_CHECK_SECONDS = number(
    "DATABASE_REPLICA_CHECK_SECONDS",
    2.0,
    0.0,
    300.0,
    "how long a replica's measured lag and state are reused before they are measured again (per process)",
    **_OPS,
)

# --- REST API -------------------------------------------------------------------------------
API_PAGE_SIZE = integer("API_PAGE_SIZE", 50, 1, 1000, "list page size (`?page_size=` changes it)", **_OPS)
API_MAX_PAGE_SIZE = integer("API_MAX_PAGE_SIZE", 500, 1, 10000, "largest `?page_size=`", **_OPS)
API_MAX_REQUEST_BYTES = integer(
    "API_MAX_REQUEST_BYTES",
    10 * 1024 * 1024,
    1024,
    1024**3,
    "largest request body; above it a 413 with the JSON error body (Django's "
    "`DATA_UPLOAD_MAX_MEMORY_SIZE` follows it)",
    default_doc="`10485760` (10 MB)",
    **_OPS,
)
API_MAX_JSON_DEPTH = integer("API_MAX_JSON_DEPTH", 64, 4, 1000, "JSON nested deeper is a 400", **_OPS)

# --- Celery and tasks -----------------------------------------------------------------------
CELERY_BROKER_URL = text(
    "CELERY_BROKER_URL", "", "e.g. `redis://127.0.0.1:6379/0`", default_doc="empty → tasks inline", **_OPS
)
CELERY_RESULT_BACKEND = text("CELERY_RESULT_BACKEND", "", "optional result backend", **_OPS)
CELERY_TASK_DEFAULT_QUEUE = text(
    "CELERY_TASK_DEFAULT_QUEUE", "memory", "queue the tasks go to (workers: `-Q memory`)", **_OPS
)
TASK_SOFT_TIME_LIMIT_SECONDS = integer(
    "TASK_SOFT_TIME_LIMIT_SECONDS",
    1800,
    10,
    86400,
    "per task; at the soft limit a maintenance job saves its cursor and re-queues itself",
    **_OPS,
)
TASK_TIME_LIMIT_SECONDS = integer(
    "TASK_TIME_LIMIT_SECONDS",
    2100,
    20,
    90000,
    "per task, the hard limit (kills the worker child); greater than the soft one",
    **_OPS,
)
TASK_MAX_RETRIES = integer(
    "TASK_MAX_RETRIES", 5, 0, 100, "retries of a task after a database error (exponential backoff)", **_OPS
)
CELERY_VISIBILITY_TIMEOUT_SECONDS = integer(
    "CELERY_VISIBILITY_TIMEOUT_SECONDS",
    2400,
    10,
    864_000,
    "Redis redelivers an unacknowledged task after this long (a lost worker host); must exceed the "
    "hard time limit",
    default_doc="`TASK_TIME_LIMIT_SECONDS` + 300",
    **_OPS,
)

# --- Quota counters, health, logging ----------------------------------------------------------
QUOTA_REDIS_URL = text(
    "QUOTA_REDIS_URL",
    "",
    "Redis for the quota counters (`redis://host:6379/1`); empty: a table of the database",
    **_OPS,
)
HEALTH_CHECK_TIMEOUT_SECONDS = number(
    "HEALTH_CHECK_TIMEOUT_SECONDS",
    0.5,
    0.05,
    10.0,
    "time each readiness check (database, broker) gets; they run concurrently",
    **_OPS,
)
LOG_LEVEL = choice(
    "LOG_LEVEL",
    "info",
    ("debug", "info", "warning", "error"),
    "level of the `memory_app` and `project` loggers",
    **_OPS,
)

# --- Read by scripts and server configs, not by settings.py -----------------------------------
_GUNICORN = {"read_by": "project/gunicorn.conf.py", **_OPS}
WEB_CONCURRENCY = integer(
    "WEB_CONCURRENCY", 2, 1, None, "gunicorn processes (about one per core)", **_GUNICORN
)
WEB_THREADS = integer("WEB_THREADS", 4, 1, None, "threads of each gunicorn process (gthread)", **_GUNICORN)
GUNICORN_BIND = text("GUNICORN_BIND", "0.0.0.0:8000", "address gunicorn listens on", **_GUNICORN)
GUNICORN_TIMEOUT = integer(
    "GUNICORN_TIMEOUT", 60, 1, None, "seconds a silent worker lives before gunicorn replaces it", **_GUNICORN
)
GUNICORN_MAX_REQUESTS = integer(
    "GUNICORN_MAX_REQUESTS",
    50000,
    0,
    None,
    "requests a gunicorn worker serves before it is replaced (with 10 % jitter); a new worker costs "
    "~5 s of CPU",
    **_GUNICORN,
)
GUNICORN_ACCESS_LOG = text(
    "GUNICORN_ACCESS_LOG", "-", "gunicorn's access log (`-`: standard output; empty: none)", **_GUNICORN
)
EMBEDDING_WARMUP = flag(
    "EMBEDDING_WARMUP",
    True,
    "load the local model and the judge's tables before a server process takes requests",
    read_by="project/warmup.py",
    **_OPS,
)
ADMIN_PASSWORD = text(
    "ADMIN_PASSWORD",
    "",
    "password of the `admin` user that `bin/serve` creates when no superuser exists",
    default_doc="generated",
    read_by="manage.py ensure_admin",
    **_OPS,
)
_CITUS = {"read_by": "project/citus_cluster.py", **_OPS}
CITUS_CACHE_DIR = text(
    "CITUS_CACHE_DIR",
    "",
    "`bin/citus`: where the Citus build is cached (per Citus and PostgreSQL version)",
    default_doc="`~/.cache/agent-memory`",
    **_CITUS,
)
CITUS_SOURCE = text(
    "CITUS_SOURCE",
    "",
    "`bin/citus`: the Citus source tarball when not in `vendor/` or `../shared/vendor/`",
    default_doc="the vendored tarball",
    **_CITUS,
)
CITUS_DIR = text("CITUS_DIR", "var/citus", "`bin/citus`: the nodes' data folders", **_CITUS)
CITUS_PORT = integer(
    "CITUS_PORT", 8160, 1, 65535, "`bin/citus`: the coordinator's port (workers take the next ones)", **_CITUS
)
CITUS_WORKERS = integer("CITUS_WORKERS", 2, 1, None, "`bin/citus`: the number of workers", **_CITUS)
CITUS_FSYNC = text(
    "CITUS_FSYNC",
    "",
    "`bin/citus`: `off` runs the nodes without fsync and full_page_writes (throwaway clusters; "
    "`bin/test --citus` sets it)",
    **_CITUS,
)
CITUS_TEST_SHARDS = integer(
    "CITUS_TEST_SHARDS",
    2,
    1,
    None,
    "`bin/test --citus`: shards per distributed table in the test database",
    read_by="bin/test",
    **_OPS,
)
CITUS_ALL_TESTS = flag(
    "CITUS_ALL_TESTS",
    False,
    "`bin/test --citus`: also run the tests that reach no database (the single-node gate runs them)",
    read_by="tests/support/citus_gaps.py",
    **_OPS,
)
TEST_DB_SUFFIX = text(
    "TEST_DB_SUFFIX",
    "",
    "appended to the test database's name, so that several checkouts can test against one server",
    read_by="project/settings_test.py",
    **_OPS,
)
DATABASE_HOST = text(
    "DATABASE_HOST",
    "db",
    "docker-compose only: the app's database host; `citus-coordinator` with the `citus` profile "
    "(docs/SCALING.md)",
    read_by="docker-compose.yml",
    **_OPS,
)

DECLARED: tuple[Setting[Any], ...] = tuple(
    value for value in list(globals().values()) if isinstance(value, Setting)
)
