from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from project import env
from project.database import verify_pgvector


def test_env_float_names_the_variable_when_out_of_range(monkeypatch):
    monkeypatch.setenv("SOME_THRESHOLD", "1.5")
    with pytest.raises(ImproperlyConfigured, match=r"SOME_THRESHOLD must be <= 1\.0"):
        env.env_float("SOME_THRESHOLD", 0.5, minimum=0.0, maximum=1.0)


def test_env_int_names_the_variable_when_not_a_number(monkeypatch):
    monkeypatch.setenv("API_PAGE_SIZE", "lots")
    with pytest.raises(ImproperlyConfigured, match="API_PAGE_SIZE must be an integer"):
        env.env_int("API_PAGE_SIZE", 50)


def test_env_bool_refuses_a_non_boolean(monkeypatch):
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG must be a boolean"):
        env.env_bool("DEBUG", False)


def test_env_choice_lists_the_allowed_values(monkeypatch):
    monkeypatch.setenv("EMBEDDING_PROVIDER", "cohere")
    with pytest.raises(ImproperlyConfigured, match="EMBEDDING_PROVIDER must be one of local, openai"):
        env.env_choice("EMBEDDING_PROVIDER", "local", ("local", "openai"))


def test_settings_refuse_to_start_without_secret_key_outside_debug():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", "import django; from django.conf import settings; settings.DEBUG"],
        env={
            "DJANGO_SETTINGS_MODULE": "project.settings",
            "DEBUG": "false",
            "ENV_FILE": "",
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def _local_postgres_reachable() -> bool:
    import psycopg

    try:
        psycopg.connect(
            host="127.0.0.1", port=5432, user="postgres", dbname="postgres", connect_timeout=2
        ).close()
    except psycopg.Error:
        return False
    return True


@pytest.mark.skipif(
    not _local_postgres_reachable(), reason="no PostgreSQL without pgvector on 127.0.0.1:5432"
)
def test_a_server_without_pgvector_stops_start_up_with_a_clear_message():
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres") as conn:
        has_vector = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name='vector'").fetchone()
    if has_vector:
        pytest.skip("the local server has pgvector")
    config = {"NAME": "postgres", "USER": "postgres", "HOST": "127.0.0.1", "PORT": "5432"}
    with pytest.raises(ImproperlyConfigured, match="no pgvector extension"):
        verify_pgvector(config)


def test_an_unreachable_database_url_names_the_variable():
    config = {"NAME": "x", "USER": "postgres", "HOST": "127.0.0.1", "PORT": "1"}
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL: cannot connect"):
        verify_pgvector(config)


def test_env_file_fills_missing_variables_without_overriding_the_environment(tmp_path, monkeypatch):
    path = tmp_path / ".env"
    path.write_text("# comment\nMEMORY_TEST_A=from-file\nMEMORY_TEST_B='quoted'\n")
    monkeypatch.setenv("MEMORY_TEST_A", "from-env")
    monkeypatch.delenv("MEMORY_TEST_B", raising=False)
    env.load_env_file(str(path))
    import os

    assert os.environ["MEMORY_TEST_A"] == "from-env"
    assert os.environ.pop("MEMORY_TEST_B") == "quoted"


def _deploy_check(**extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "ENV_FILE": "",
        "DEBUG": "false",
        "ALLOWED_HOSTS": "memory.example.com",
        "SECRET_KEY": "a-real-secret-key-for-the-deployment-check-0123456789-abcdefghij",
        "DJANGO_SETTINGS_MODULE": "project.settings",
        **extra,
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_relaxing_a_production_security_default_is_explicit_and_the_deploy_check_names_it():
    result = _deploy_check(SECURE_SSL_REDIRECT="false", SESSION_COOKIE_SECURE="false")
    assert result.returncode != 0
    assert "security.W008" in result.stderr + result.stdout
    assert "security.W012" in result.stderr + result.stdout


def test_the_proxy_ssl_header_must_name_a_header_and_a_value():
    result = _deploy_check(SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO")
    assert result.returncode != 0
    assert "SECURE_PROXY_SSL_HEADER must be" in result.stderr
