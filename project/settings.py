"""Settings, read from the environment and validated strictly (see the README's settings table)."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from project.database import CITUS_ENGINE, database_config
from project.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_optional_float,
    env_str,
    load_env_file,
)

BASE_DIR = Path(__file__).resolve().parent.parent
# Values from the environment win over the file; ENV_FILE="" disables it.
load_env_file(os.environ.get("ENV_FILE", str(BASE_DIR / ".env")))

# --- Core -----------------------------------------------------------------------------------
DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG is off")
    SECRET_KEY = "insecure-development-key-only-for-debug"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"] if not DEBUG else ["*"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# The MCP HTTP transport's DNS-rebinding protection (memory_app/mcp/http.py): a Host not listed is a
# 421, an Origin header not listed a 403 (clients that send no Origin, i.e. not browsers, pass).
# Exact names, any port ("host:8001" for one port); by default the exact names of ALLOWED_HOSTS.
MCP_ALLOWED_HOSTS = env_list(
    "MCP_ALLOWED_HOSTS",
    [h for h in ALLOWED_HOSTS if h != "*" and not h.startswith(".")] or ["127.0.0.1", "localhost"],
)
MCP_ALLOWED_ORIGINS = env_list("MCP_ALLOWED_ORIGINS", [])
# After warm-up a server process (gunicorn worker, MCP server) freezes its start-up objects and runs
# Python's youngest collection after this many allocations instead of 700 (project/warmup.gc_tune);
# 0 keeps Python's defaults.
SERVER_GC_THRESHOLD = env_int("SERVER_GC_THRESHOLD", 10_000, minimum=0, maximum=10_000_000)

# --- Transport security ----------------------------------------------------------------------
# Secure by default outside DEBUG (`manage.py check --deploy --fail-level WARNING` passes with only
# DEBUG=false, SECRET_KEY and ALLOWED_HOSTS set); each variable relaxes one of them explicitly, for
# instance SECURE_SSL_REDIRECT=false when a TLS-terminating proxy already redirects.
_PRODUCTION = not DEBUG
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", _PRODUCTION)
# The liveness and readiness probes of a container or load balancer speak plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^api/v1/health(/|$)"]
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", _PRODUCTION)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", _PRODUCTION)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if _PRODUCTION else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", _PRODUCTION)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", _PRODUCTION)
# Behind a proxy that terminates TLS: the header it sets, as "HEADER,value" (for example
# "HTTP_X_FORWARDED_PROTO,https"). Unset by default: trusting it without such a proxy in front
# would let any client claim HTTPS.
_proxy_header = env_list("SECURE_PROXY_SSL_HEADER", [])
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
DATABASE_URL = env_str("DATABASE_URL")
EMBEDDED_PG_DIR = Path(env_str("EMBEDDED_PG_DIR", str(BASE_DIR / "var" / "pgdata")))
# initdb's 128MB holds a fraction of a 100 k-memory scope's table and indexes (~600 MB): each search
# then reads its pages through the OS cache (docs/PERFORMANCE.md). Only the embedded server: a
# DATABASE_URL server is its operator's to size.
EMBEDDED_PG_SHARED_BUFFERS = env_str("EMBEDDED_PG_SHARED_BUFFERS", "1GB")
DATABASES = {
    "default": database_config(
        url=DATABASE_URL,
        data_dir=EMBEDDED_PG_DIR,
        check_pgvector=env_bool("PGVECTOR_CHECK", True),
        shared_buffers=EMBEDDED_PG_SHARED_BUFFERS,
    )
}
# A Citus coordinator is recognised by the start-up check above; with PGVECTOR_CHECK off, this says
# so instead (project/citus_backend: the SQL Django writes in the forms Citus routes).
if DATABASE_URL and env_bool("DATABASE_CITUS", False):
    DATABASES["default"]["ENGINE"] = CITUS_ENGINE
# Read replicas (streaming standbys of DATABASES["default"]): the read-only API paths use a healthy
# one (memory_app/db_routing.py); a replica further behind than the lag limit, or down, is skipped.
DATABASE_REPLICA_URLS = env_list("DATABASE_REPLICA_URLS", [])
DATABASE_REPLICA_ALIASES: list[str] = []
for _number, _url in enumerate(DATABASE_REPLICA_URLS):
    _alias = f"replica_{_number}"
    DATABASES[_alias] = database_config(url=_url, data_dir=EMBEDDED_PG_DIR, check_pgvector=False)
    # Tests: the replica serves the primary's test database; Django neither creates nor flushes it.
    DATABASES[_alias]["TEST"] = {"MIRROR": "default"}
    # A replica that is down must cost a read little: it is skipped, not waited for.
    DATABASES[_alias].setdefault("OPTIONS", {}).setdefault("connect_timeout", 2)
    DATABASE_REPLICA_ALIASES.append(_alias)
DATABASE_REPLICA_MAX_LAG_SECONDS = env_float(
    "DATABASE_REPLICA_MAX_LAG_SECONDS", 5.0, minimum=0.0, maximum=3600.0
)
# How long a replica's measured state (lag, up or down) is reused before it is measured again.
DATABASE_REPLICA_CHECK_SECONDS = env_float("DATABASE_REPLICA_CHECK_SECONDS", 2.0, minimum=0.0, maximum=300.0)
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
API_PAGE_SIZE = env_int("API_PAGE_SIZE", 50, minimum=1, maximum=1000)
API_MAX_PAGE_SIZE = env_int("API_MAX_PAGE_SIZE", 500, minimum=1, maximum=10000)
# The largest request body the API takes (a 413 with a JSON error above it). Large enough for a
# session append of several MB; Django's own form-data limit follows it.
API_MAX_REQUEST_BYTES = env_int("API_MAX_REQUEST_BYTES", 10 * 1024 * 1024, minimum=1024, maximum=1024**3)
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_REQUEST_BYTES
# JSON nested deeper than this is a 400 (real payloads are a few levels deep).
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 64, minimum=4, maximum=1000)
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
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
# Without a broker (the embedded default) tasks run inline in the calling process.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"

# --- Background work and operations (ops: tasks, periodic jobs, compaction) ------------------
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "memory")
CELERY_TASK_SOFT_TIME_LIMIT = env_int("TASK_SOFT_TIME_LIMIT_SECONDS", 1800, minimum=10, maximum=86400)
# The hard limit kills the worker child; the soft one lets a job save its cursor and re-queue itself.
CELERY_TASK_TIME_LIMIT = env_int("TASK_TIME_LIMIT_SECONDS", 2100, minimum=20, maximum=90000)
if CELERY_TASK_TIME_LIMIT <= CELERY_TASK_SOFT_TIME_LIMIT:
    raise ImproperlyConfigured("TASK_TIME_LIMIT_SECONDS must be greater than TASK_SOFT_TIME_LIMIT_SECONDS")
TASK_MAX_RETRIES = env_int("TASK_MAX_RETRIES", 5, minimum=0, maximum=100)
# Tasks are acknowledged after they finish (acks_late) and a task whose worker died is rejected back
# to the queue (reject_on_worker_lost). Redis hands an unacknowledged message to another worker once
# this long has passed since delivery (a whole worker host lost), so it must exceed the hard time
# limit, or a long task still running would be delivered twice (the job claim makes that harmless).
CELERY_VISIBILITY_TIMEOUT_SECONDS = env_int(
    "CELERY_VISIBILITY_TIMEOUT_SECONDS", CELERY_TASK_TIME_LIMIT + 300, minimum=10, maximum=864_000
)
if CELERY_VISIBILITY_TIMEOUT_SECONDS <= CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured(
        "CELERY_VISIBILITY_TIMEOUT_SECONDS must be greater than TASK_TIME_LIMIT_SECONDS"
    )
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT_SECONDS}
# Publishing a task to a dead broker gives up after ~1 s instead of blocking the request or command.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.3}
COMPACTION_INTERVAL_MINUTES = env_int("COMPACTION_INTERVAL_MINUTES", 360, minimum=1, maximum=100_000)
REVIEW_DETECTION_INTERVAL_MINUTES = env_int(
    "REVIEW_DETECTION_INTERVAL_MINUTES", 720, minimum=1, maximum=100_000
)
EXPIRY_INTERVAL_MINUTES = env_int("EXPIRY_INTERVAL_MINUTES", 60, minimum=1, maximum=100_000)
# Partial HNSW indexes for scopes that grew past SEARCH_PARTIAL_INDEX_MIN_ROWS (and dropped for
# those that shrank); builds run CONCURRENTLY, so daily is cheap when nothing changed.
SEARCH_INDEXES_INTERVAL_MINUTES = env_int("SEARCH_INDEXES_INTERVAL_MINUTES", 1440, minimum=1, maximum=100_000)
# An index build over a large scope takes minutes; an interrupted one is rebuilt from scratch, so
# this task gets a longer limit than the others.
SEARCH_INDEXES_TIME_LIMIT_SECONDS = env_int(
    "SEARCH_INDEXES_TIME_LIMIT_SECONDS", 7200, minimum=60, maximum=86400
)
# Cosine-distance radius of compaction candidates; tighter than the store path's candidate radius
# because it is applied to every pair of a whole scope (docs/OPERATIONS.md has the measurement).
COMPACTION_RADIUS = env_float("COMPACTION_RADIUS", 0.45, minimum=0.01, maximum=1.0)
COMPACTION_JUDGE = env_choice("COMPACTION_JUDGE", "offline", ("offline", "llm"))
# Scopes up to this many rows compare every pair; larger ones use inverted lists (bench/compaction.py).
COMPACTION_EXACT_MAX_ROWS = env_int("COMPACTION_EXACT_MAX_ROWS", 5_000, minimum=2, maximum=10_000_000)
# BLAS threads per compaction process (0 = the library default, all cores): 1 suits workers that
# share the machine; a dedicated box gains from its core count.
COMPACTION_BLAS_THREADS = env_int("COMPACTION_BLAS_THREADS", 1, minimum=0, maximum=256)
COMPACTION_MAX_GROUP_SIZE = env_int("COMPACTION_MAX_GROUP_SIZE", 20, minimum=2, maximum=1000)
# A running job writes a heartbeat this often (and after every scope), from a thread, so a long
# scope still shows the worker alive.
MAINTENANCE_JOB_HEARTBEAT_SECONDS = env_int("MAINTENANCE_JOB_HEARTBEAT_SECONDS", 15, minimum=1, maximum=3600)
# A job without a heartbeat (or, queued, without being handed out) for this long is stale: its worker
# died or its message was lost. A redelivered task or the periodic scheduler takes it over and it
# resumes from its cursor. At least three heartbeats, so one slow database write is not a death.
MAINTENANCE_JOB_STALE_SECONDS = env_int("MAINTENANCE_JOB_STALE_SECONDS", 90, minimum=3, maximum=86_400)
if MAINTENANCE_JOB_STALE_SECONDS < 3 * MAINTENANCE_JOB_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured(
        "MAINTENANCE_JOB_STALE_SECONDS must be at least 3 x MAINTENANCE_JOB_HEARTBEAT_SECONDS"
    )

# --- Embeddings and LLM ---------------------------------------------------------------------
EMBEDDING_PROVIDER = env_choice("EMBEDDING_PROVIDER", "local", ("local", "openai"))
EMBEDDING_MODEL = env_str(
    "EMBEDDING_MODEL", "all-MiniLM-L6-v2" if EMBEDDING_PROVIDER == "local" else "text-embedding-3-small"
)
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL")
OPENAI_TIMEOUT_SECONDS = env_float("OPENAI_TIMEOUT_SECONDS", 30.0, minimum=1.0, maximum=600.0)
LLM_MODEL = env_str("LLM_MODEL")
if EMBEDDING_PROVIDER == "openai" and not OPENAI_API_KEY:
    raise ImproperlyConfigured("OPENAI_API_KEY is required when EMBEDDING_PROVIDER=openai")

# --- Embedding providers and cache (README "Embeddings") ---------------------------------------
# Batching limits of the OpenAI embeddings API: inputs per request and tokens per request.
OPENAI_EMBEDDING_BATCH_SIZE = env_int("OPENAI_EMBEDDING_BATCH_SIZE", 2048, minimum=1, maximum=2048)
OPENAI_EMBEDDING_MAX_TOKENS_PER_REQUEST = env_int(
    "OPENAI_EMBEDDING_MAX_TOKENS_PER_REQUEST", 300_000, minimum=8192, maximum=300_000
)
# Our retries (the SDK's are off): 429, 5xx, timeouts; exponential backoff from this base.
OPENAI_EMBEDDING_MAX_RETRIES = env_int("OPENAI_EMBEDDING_MAX_RETRIES", 2, minimum=0, maximum=10)
# Embeddings are on the request path: a provider that does not answer within this is failed (and
# retried), far below OPENAI_TIMEOUT_SECONDS, which the LLM judge's longer calls use.
OPENAI_EMBEDDING_TIMEOUT_SECONDS = env_float(
    "OPENAI_EMBEDDING_TIMEOUT_SECONDS", 5.0, minimum=0.1, maximum=600.0
)
OPENAI_EMBEDDING_BACKOFF_SECONDS = env_float(
    "OPENAI_EMBEDDING_BACKOFF_SECONDS", 0.5, minimum=0.0, maximum=60.0
)
EMBEDDING_CACHE_ENABLED = env_bool("EMBEDDING_CACHE_ENABLED", True)
# The local model embeds the texts of concurrent requests of one process in one forward pass,
# waiting up to EMBEDDING_LOCAL_BATCH_WAIT_MS for company (embeddings/batching.py, bench/load.py).
EMBEDDING_LOCAL_BATCHING = env_bool("EMBEDDING_LOCAL_BATCHING", True)
EMBEDDING_LOCAL_BATCH_WAIT_MS = env_float("EMBEDDING_LOCAL_BATCH_WAIT_MS", 2.0, minimum=0.0, maximum=100.0)
EMBEDDING_LOCAL_MAX_BATCH = env_int("EMBEDDING_LOCAL_MAX_BATCH", 32, minimum=1, maximum=1024)
# torch threads per process (0 = torch's default, all cores). 1 by default: with two threads, any other
# busy process on the cores (PostgreSQL, another worker) makes torch's threads wait on each other, and
# one short text took 240-520 ms instead of 13 ms on a 2-core machine at load average 2.
EMBEDDING_TORCH_THREADS = env_int("EMBEDDING_TORCH_THREADS", 1, minimum=0, maximum=256)
# What runs the local model's transformer pass: "onnx" (ONNX Runtime on a file exported once from the
# installed weights into EMBEDDING_ONNX_DIR; ~2.5x less CPU for a short text, the same vectors to
# ~1e-7) or "torch". A failed ONNX start falls back to torch, and health says which one runs.
EMBEDDING_LOCAL_RUNTIME = env_choice("EMBEDDING_LOCAL_RUNTIME", "onnx", ("onnx", "torch"))
EMBEDDING_ONNX_DIR = env_str("EMBEDDING_ONNX_DIR", str(BASE_DIR / "var" / "models"))
# Memories stored while the provider was down get their vectors from a task; the sweep re-queues
# any still pending this often, this many at a time.
EMBEDDING_SWEEP_INTERVAL_MINUTES = env_int("EMBEDDING_SWEEP_INTERVAL_MINUTES", 10, minimum=1, maximum=100_000)
EMBEDDING_SWEEP_BATCH = env_int("EMBEDDING_SWEEP_BATCH", 1000, minimum=1, maximum=1_000_000)
# A provider that failed this many requests in a row is not called for EMBEDDING_BREAKER_SECONDS:
# requests degrade at once (search full text only, stores pending) instead of waiting on it.
EMBEDDING_BREAKER_FAILURES = env_int("EMBEDDING_BREAKER_FAILURES", 1, minimum=1, maximum=1000)
EMBEDDING_BREAKER_SECONDS = env_float("EMBEDDING_BREAKER_SECONDS", 30.0, minimum=0.0, maximum=3600.0)
# Tier 3 (near-duplicate reuse by a local proxy model): auto = on for a remote provider only.
EMBEDDING_NEAR_DUP = env_choice("EMBEDDING_NEAR_DUP", "auto", ("auto", "on", "off"))
SEMANTIC_DEDUP_THRESHOLD = env_float("SEMANTIC_DEDUP_THRESHOLD", 0.99, minimum=0.90, maximum=0.999)
# ...and the order-aware surface guard beside it (MiniLM alone reuses across swapped words).
EMBEDDING_NEAR_DUP_SURFACE_MIN = env_float("EMBEDDING_NEAR_DUP_SURFACE_MIN", 0.95, minimum=0.5, maximum=1.0)
EMBEDDING_NEAR_DUP_EF_SEARCH = env_int("EMBEDDING_NEAR_DUP_EF_SEARCH", 40, minimum=1, maximum=1000)
# text-embedding-3-small: $0.02 per million tokens.
EMBEDDING_PRICE_PER_1K_TOKENS = env_float(
    "EMBEDDING_PRICE_PER_1K_TOKENS", 0.00002, minimum=0.0, maximum=100.0
)
EMBEDDING_STATS_FLUSH_SECONDS = env_float("EMBEDDING_STATS_FLUSH_SECONDS", 5.0, minimum=0.0, maximum=3600.0)
EMBEDDING_STATS_LOG_EVERY = env_int("EMBEDDING_STATS_LOG_EVERY", 1000, minimum=1, maximum=10**9)

# --- Deduplication judge (memory_app/judge) ------------------------------------------------
# Which relation judge the write path uses by default; "llm" falls back to "offline" on any failure.
DEDUP_JUDGE = env_choice("DEDUP_JUDGE", "offline", ("offline", "llm"))
# Unset: the values fitted per embedding model in memory_app/judge/calibration/<model>.json.
DEDUP_CANDIDATE_RADIUS = env_optional_float("DEDUP_CANDIDATE_RADIUS", minimum=0.0, maximum=2.0)
DEDUP_REVIEW_BELOW = env_optional_float("DEDUP_REVIEW_BELOW", minimum=0.0, maximum=1.0)
# One LLM judge call covers all candidates of a new memory; on timeout the offline judge answers.
DEDUP_LLM_TIMEOUT_SECONDS = env_float("DEDUP_LLM_TIMEOUT_SECONDS", 20.0, minimum=1.0, maximum=300.0)

# --- Memory defaults ------------------------------------------------------------------------
MEMORY_MAX_TEXT_CHARS = env_int("MEMORY_MAX_TEXT_CHARS", 8000, minimum=100, maximum=1_000_000)
MEMORY_DEFAULT_CONFIDENCE = env_float("MEMORY_DEFAULT_CONFIDENCE", 0.5, minimum=0.0, maximum=1.0)
# A memory's free-form `metadata` is copied into lineage snapshots and returned with every list and
# search result: bounded by its JSON size (UTF-8 bytes), nesting depth, number of keys (all levels)
# and key length. Every write path (REST, MCP, import, interactions) refuses more with a 400.
MEMORY_METADATA_MAX_BYTES = env_int("MEMORY_METADATA_MAX_BYTES", 16384, minimum=256, maximum=1_048_576)
MEMORY_METADATA_MAX_DEPTH = env_int("MEMORY_METADATA_MAX_DEPTH", 32, minimum=1, maximum=64)
MEMORY_METADATA_MAX_KEYS = env_int("MEMORY_METADATA_MAX_KEYS", 256, minimum=1, maximum=100_000)
MEMORY_METADATA_MAX_KEY_CHARS = env_int("MEMORY_METADATA_MAX_KEY_CHARS", 128, minimum=1, maximum=10_000)
# Access counts of reads are added up per process and written every this many seconds (0: at once).
MEMORY_ACCESS_FLUSH_SECONDS = env_float("MEMORY_ACCESS_FLUSH_SECONDS", 1.0, minimum=0.0, maximum=300.0)

# --- Search candidates (selectors/search/candidates.py; see docs/PERFORMANCE.md for how these were set) ---
# Scopes up to this many rows are searched exactly (B-tree selection, exact distance order).
SEARCH_EXACT_MAX_ROWS = env_int("SEARCH_EXACT_MAX_ROWS", 5000, minimum=0, maximum=100_000_000)
# hnsw.ef_search for the shared HNSW index (filtered, iterative scan) and for per-scope partial ones.
SEARCH_HNSW_EF_SEARCH = env_int("SEARCH_HNSW_EF_SEARCH", 200, minimum=10, maximum=1000)
SEARCH_PARTIAL_EF_SEARCH = env_int("SEARCH_PARTIAL_EF_SEARCH", 200, minimum=10, maximum=1000)
# Upper bound on tuples an iterative scan visits before the exact fallback takes over.
SEARCH_HNSW_MAX_SCAN_TUPLES = env_int("SEARCH_HNSW_MAX_SCAN_TUPLES", 20000, minimum=100, maximum=10_000_000)
# A user or namespace with at least this many rows gets its own partial HNSW index (search_indexes).
SEARCH_PARTIAL_INDEX_MIN_ROWS = env_int(
    "SEARCH_PARTIAL_INDEX_MIN_ROWS", 10000, minimum=100, maximum=100_000_000
)
# ...unless it holds more than this share of the table: the shared index serves so loose a filter well.
SEARCH_PARTIAL_INDEX_MAX_FRACTION = env_float(
    "SEARCH_PARTIAL_INDEX_MAX_FRACTION", 0.5, minimum=0.0, maximum=1.0
)
# maintenance_work_mem of a partial index build (the graph of 100 k rows needs ~200 MB to build fast).
SEARCH_INDEX_BUILD_MEMORY_MB = env_int("SEARCH_INDEX_BUILD_MEMORY_MB", 512, minimum=64, maximum=65536)

# --- Store (write path and store-time dedup; services/store/write.py) ---------------------------------
# The judge and the candidate radius default to the judge's settings and calibration file; an
# AgentProfile.config and each request may override deduplicate, judge and candidate_radius.
STORE_DEDUP_ENABLED = env_bool("STORE_DEDUP_ENABLED", True)
STORE_CANDIDATES_K = env_int("STORE_CANDIDATES_K", 5, minimum=1, maximum=50)
# Scopes up to this many active rows are searched exactly through memory_scope_idx; larger ones by HNSW.
STORE_EXACT_SCOPE_MAX = env_int("STORE_EXACT_SCOPE_MAX", 2000, minimum=0, maximum=10_000_000)
STORE_HNSW_EF_SEARCH = env_int("STORE_HNSW_EF_SEARCH", 80, minimum=10, maximum=1000)
STORE_MAX_BATCH = env_int("STORE_MAX_BATCH", 100, minimum=1, maximum=10_000)
# Feedback moves confidence this fraction of the way to 1 (helpful) or to 0 (harmful).
MEMORY_FEEDBACK_STEP = env_float("MEMORY_FEEDBACK_STEP", 0.1, minimum=0.0, maximum=1.0)

# --- Kinds: short-term sessions, procedures, extraction, forgetting --------------------------------
# A session is trimmed when messages + summary pass SESSION_TRIM_AT of the context window, down to
# SESSION_TRIM_TO (hysteresis, so an LLM summary is not asked for on every append).
SESSION_CONTEXT_WINDOW_TOKENS = env_int(
    "SESSION_CONTEXT_WINDOW_TOKENS", 24_000, minimum=100, maximum=10_000_000
)
SESSION_TRIM_AT = env_float("SESSION_TRIM_AT", 0.8, minimum=0.05, maximum=1.0)
SESSION_TRIM_TO = env_float("SESSION_TRIM_TO", 0.6, minimum=0.01, maximum=1.0)
if SESSION_TRIM_TO > SESSION_TRIM_AT:
    raise ImproperlyConfigured("SESSION_TRIM_TO must be <= SESSION_TRIM_AT")
SESSION_SUMMARY_MAX_TOKENS = env_int("SESSION_SUMMARY_MAX_TOKENS", 500, minimum=0, maximum=100_000)
PROCEDURE_CONFIDENCE_DIVISOR = env_float("PROCEDURE_CONFIDENCE_DIVISOR", 10.0, minimum=0.1, maximum=1e6)
PROCEDURE_RECOMMEND_THRESHOLD = env_float("PROCEDURE_RECOMMEND_THRESHOLD", 0.7, minimum=0.0, maximum=1.0)
# Cosine distance within which the nearest stored pattern counts as the same kind of query.
PROCEDURE_MATCH_MAX_DISTANCE = env_float("PROCEDURE_MATCH_MAX_DISTANCE", 0.25, minimum=0.0, maximum=2.0)
EXTRACTION_MODE = env_choice("EXTRACTION_MODE", "auto", ("auto", "llm", "rules"))
# POST /interactions: messages per interaction; /interactions/batch: interactions per request.
INTERACTION_MAX_MESSAGES = env_int("INTERACTION_MAX_MESSAGES", 500, minimum=1, maximum=100_000)
INTERACTIONS_BATCH_MAX = env_int("INTERACTIONS_BATCH_MAX", 50, minimum=1, maximum=10_000)
# Messages kept as said skip the relation judge (an utterance is an event; identical text is still
# caught by hash); true sends them through it like the facts drawn from them.
INTERACTION_JUDGE_MESSAGES = env_bool("INTERACTION_JUDGE_MESSAGES", False)
# Forgetting: days without use after which a memory expires (0 = never); pinned rows never expire.
MEMORY_TTL_DAYS_EPISODIC = env_int("MEMORY_TTL_DAYS_EPISODIC", 213, minimum=0, maximum=100_000)
MEMORY_TTL_DAYS_SEMANTIC = env_int("MEMORY_TTL_DAYS_SEMANTIC", 213, minimum=0, maximum=100_000)
MEMORY_TTL_DAYS_PROCEDURAL = env_int("MEMORY_TTL_DAYS_PROCEDURAL", 213, minimum=0, maximum=100_000)
MEMORY_TTL_DAYS_SHORT_TERM = env_int("MEMORY_TTL_DAYS_SHORT_TERM", 213, minimum=0, maximum=100_000)
# Keep at most N active episodic memories per user (0 = no cap), ranked by recency and usefulness.
MEMORY_KEEP_TOP_N = env_int("MEMORY_KEEP_TOP_N", 0, minimum=0, maximum=10_000_000)
MEMORY_RETENTION_HALF_LIFE_DAYS = env_float("MEMORY_RETENTION_HALF_LIFE_DAYS", 30.0, minimum=0.1, maximum=1e5)
# Expired memories are soft-deleted first (status deleted) and purged, text and lineage, after this.
MEMORY_EXPIRY_GRACE_DAYS = env_int("MEMORY_EXPIRY_GRACE_DAYS", 30, minimum=0, maximum=100_000)

# --- Retrieval: search ranking, load-time dedup, clustering, MMR, context (recall area) ----------
# Hybrid fusion of the vector and BM25 lists: "weighted" (min-max scores) or "rrf" (ranks).
SEARCH_FUSION = env_choice("SEARCH_FUSION", "weighted", ("weighted", "rrf"))
SEARCH_VECTOR_WEIGHT = env_float("SEARCH_VECTOR_WEIGHT", 0.5, minimum=0.0, maximum=1.0)
SEARCH_RRF_K = env_float("SEARCH_RRF_K", 60.0, minimum=1.0, maximum=1000.0)
# Rows each generator returns before fusion (at least the fetch size of the request).
SEARCH_CANDIDATES = env_int("SEARCH_CANDIDATES", 100, minimum=10, maximum=10_000)
# With load-time dedup on, a search reads up to twice its limit more rows than it returns, so that
# collapsed duplicates, clusters and MMR have rows to fill in from, but at most this many more:
# /context/all's 60 hits read 120 rows, not 180 (docs/PERFORMANCE.md).
SEARCH_FETCH_MARGIN = env_int("SEARCH_FETCH_MARGIN", 60, minimum=0, maximum=10_000)
# Full-text ranking: "bm25" (IDF-weighted, computed in SQL) or PostgreSQL's "ts_rank" (ts_rank_cd).
SEARCH_LEXICAL = env_choice("SEARCH_LEXICAL", "bm25", ("bm25", "ts_rank"))
SEARCH_BM25_K1 = env_float("SEARCH_BM25_K1", 1.2, minimum=0.0, maximum=10.0)
SEARCH_BM25_B = env_float("SEARCH_BM25_B", 0.75, minimum=0.0, maximum=1.0)
# In a scope over SEARCH_EXACT_MAX_ROWS rows (or this, if larger), a query word held by more than this
# many rows only adds to the scores of rows a rarer word selects (selectors/search/lexical.py,
# retrieval/bm25.py); smaller scopes are scored in one statement as they always were.
SEARCH_BM25_TERM_CAP = env_int("SEARCH_BM25_TERM_CAP", 1000, minimum=10, maximum=100_000_000)
# How much a word of a memory's `context` counts against a word of its text.
SEARCH_CONTEXT_WEIGHT = env_float("SEARCH_CONTEXT_WEIGHT", 0.5, minimum=0.0, maximum=1.0)
# Temporal decay on the age of a memory (created_at): 0 disables it; never below the floor.
SEARCH_DECAY_HALF_LIFE_DAYS = env_float("SEARCH_DECAY_HALF_LIFE_DAYS", 180.0, minimum=0.0, maximum=1e6)
SEARCH_DECAY_FLOOR = env_float("SEARCH_DECAY_FLOOR", 0.5, minimum=0.0, maximum=1.0)
# ACE multiplier: confidence (0.5 neutral) and net feedback (helpful - harmful, through tanh).
SEARCH_ACE_CONFIDENCE_WEIGHT = env_float("SEARCH_ACE_CONFIDENCE_WEIGHT", 0.2, minimum=0.0, maximum=2.0)
SEARCH_ACE_FEEDBACK_WEIGHT = env_float("SEARCH_ACE_FEEDBACK_WEIGHT", 0.1, minimum=0.0, maximum=2.0)
# Load-time dedup: cluster results within this cosine distance, verify with the relation judge.
SEARCH_DEDUP_ENABLED = env_bool("SEARCH_DEDUP_ENABLED", True)
SEARCH_DEDUP_THRESHOLD = env_optional_float("SEARCH_DEDUP_THRESHOLD", minimum=0.0, maximum=2.0)
SEARCH_DEDUP_USE_LLM = env_bool("SEARCH_DEDUP_USE_LLM", False)
# Semantic clustering (DBSCAN on cosine distance) and MMR; each may be overridden per agent profile.
SEARCH_CLUSTERING_ENABLED = env_bool("SEARCH_CLUSTERING_ENABLED", True)
SEARCH_DBSCAN_EPSILON = env_float("SEARCH_DBSCAN_EPSILON", 0.15, minimum=0.0, maximum=2.0)
SEARCH_DBSCAN_MIN_POINTS = env_int("SEARCH_DBSCAN_MIN_POINTS", 2, minimum=1, maximum=1000)
SEARCH_MMR_ENABLED = env_bool("SEARCH_MMR_ENABLED", False)
SEARCH_MMR_LAMBDA = env_float("SEARCH_MMR_LAMBDA", 0.7, minimum=0.0, maximum=1.0)
# POST /context: score = similarity x CONTEXT_SIMILARITY_WEIGHT + confidence x CONTEXT_CONFIDENCE_WEIGHT.
CONTEXT_SIMILARITY_WEIGHT = env_float("CONTEXT_SIMILARITY_WEIGHT", 0.6, minimum=0.0, maximum=1.0)
CONTEXT_CONFIDENCE_WEIGHT = env_float("CONTEXT_CONFIDENCE_WEIGHT", 0.4, minimum=0.0, maximum=1.0)
CONTEXT_MAX_TOKENS = env_int("CONTEXT_MAX_TOKENS", 1000, minimum=1, maximum=1_000_000)
CONTEXT_CANDIDATES = env_int("CONTEXT_CANDIDATES", 200, minimum=1, maximum=10_000)
# /context and /context/all inject no memory whose relevance to the query (the weighted fusion of
# cosine similarity and BM25, before time and feedback) is below this: a query unrelated to every
# memory gets none. Calibrated on LoCoMo conversations 0-4 (docs/EVALUATION.md); 0 turns it off.
CONTEXT_RELEVANCE_FLOOR = env_float("CONTEXT_RELEVANCE_FLOOR", 0.15, minimum=0.0, maximum=1.0)
# POST /context/all: default budget, and the shares of it each part may use first; what a part
# leaves unused flows to the others (selectors/context/turn.py). Shares are normalised to sum to 1.
CONTEXT_ALL_MAX_TOKENS = env_int("CONTEXT_ALL_MAX_TOKENS", 2000, minimum=1, maximum=1_000_000)
CONTEXT_ALL_SHARES = {
    "short_term": env_float("CONTEXT_ALL_SHARE_SHORT_TERM", 0.3, minimum=0.0, maximum=1.0),
    "episodic": env_float("CONTEXT_ALL_SHARE_EPISODIC", 0.45, minimum=0.0, maximum=1.0),
    "semantic": env_float("CONTEXT_ALL_SHARE_SEMANTIC", 0.15, minimum=0.0, maximum=1.0),
    "procedural": env_float("CONTEXT_ALL_SHARE_PROCEDURAL", 0.1, minimum=0.0, maximum=1.0),
}
if not sum(CONTEXT_ALL_SHARES.values()) > 0:
    raise ImproperlyConfigured("CONTEXT_ALL_SHARE_* must not all be 0")
# Memories per part considered for packing when the request gives no episodic/semantic limit.
CONTEXT_ALL_CANDIDATES = env_int("CONTEXT_ALL_CANDIDATES", 60, minimum=1, maximum=1000)

# --- Time in queries --------------------------------------------------------------------------
# A time expression in a search or /context query ("yesterday", "in May") names a window of event
# dates: "boost" scales the scores of memories dated inside it, "filter" keeps only those, "off"
# ignores it. A request may choose per call (`query_time`).
SEARCH_QUERY_TIME = env_choice("SEARCH_QUERY_TIME", "boost", ("boost", "filter", "off"))
SEARCH_QUERY_TIME_BOOST = env_float("SEARCH_QUERY_TIME_BOOST", 1.0, minimum=0.0, maximum=10.0)

# --- Quotas --------------------------------------------------------------------------------
# Requests per minute per API key (a fixed one-minute window; 429 with Retry-After past it) and
# active memories per tenant (a store past it is a 403 quota_exceeded). 0: no limit, the default.
QUOTA_REQUESTS_PER_MINUTE = env_int("QUOTA_REQUESTS_PER_MINUTE", 0, minimum=0, maximum=10_000_000)
QUOTA_MAX_MEMORIES = env_int("QUOTA_MAX_MEMORIES", 0, minimum=0, maximum=1_000_000_000)
# How long a tenant's counted active memories are trusted before they are counted again.
QUOTA_COUNT_TTL_SECONDS = env_int("QUOTA_COUNT_TTL_SECONDS", 60, minimum=1, maximum=86_400)
# Where the counters live: Redis when a URL is given, else a table of the database
# (memory_app_quota_cache, created by migration 0013).
QUOTA_REDIS_URL = env_str("QUOTA_REDIS_URL")
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
HEALTH_CHECK_TIMEOUT_SECONDS = env_float("HEALTH_CHECK_TIMEOUT_SECONDS", 0.5, minimum=0.05, maximum=10.0)

# --- Logging --------------------------------------------------------------------------------
LOG_LEVEL = env_choice("LOG_LEVEL", "info", ("debug", "info", "warning", "error")).upper()
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
