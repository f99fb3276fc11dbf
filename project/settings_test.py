"""Test settings: the production settings with a throwaway secret and inline Celery."""

import os

os.environ.setdefault("ENV_FILE", "")  # a developer's .env must not change the tests
os.environ.setdefault("SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("LOG_LEVEL", "warning")
# The test client, the live server and the browser tests speak plain HTTP.
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
os.environ.setdefault("SESSION_COOKIE_SECURE", "false")
os.environ.setdefault("CSRF_COOKIE_SECURE", "false")
# A read's access counts are written with it: tests read them back at once.
os.environ.setdefault("MEMORY_ACCESS_FLUSH_SECONDS", "0")
os.environ.setdefault("SECURE_HSTS_SECONDS", "0")

from project.settings import *  # noqa: F403
from project.settings import DATABASES

# Several checkouts (or helpers) may test against one embedded server at once.
DATABASES["default"]["TEST"] = {"NAME": "test_memory" + os.environ.get("TEST_DB_SUFFIX", "")}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
