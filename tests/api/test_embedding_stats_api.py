"""`GET /api/v1/stats/embeddings`, `manage.py embedding_stats`, token counting, settings checks."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from memory_app.embeddings import tokens
from memory_app.models import EmbeddingCacheStats
from memory_app.services.api_keys import api_key_revoke

URL = "/api/v1/stats/embeddings"


@pytest.fixture
def counters(tenant_a) -> EmbeddingCacheStats:  # type: ignore[no-untyped-def]
    """Tenant A's own counters."""
    return EmbeddingCacheStats.objects.create(
        tenant=tenant_a.tenant,
        model="text-embedding-3-small",
        exact_hits=6,
        normalized_hits=2,
        near_hits=2,
        misses=10,
        provider_calls=3,
        tokens_embedded=500,
        tokens_avoided=250_000,
    )


@override_settings(EMBEDDING_PRICE_PER_1K_TOKENS=0.02)
def test_the_stats_endpoint_reports_hits_by_tier_and_cost_saved(tenant_a, counters):
    response = tenant_a.client.get(URL)
    assert response.status_code == 200
    (row,) = response.json()["models"]
    assert row["model"] == "text-embedding-3-small"
    assert (row["exact_hits"], row["normalized_hits"], row["near_hits"], row["misses"]) == (6, 2, 2, 10)
    assert row["lookups"] == 20 and row["hit_rate"] == 0.5
    assert row["tokens_avoided"] == 250_000 and row["estimated_cost_saved"] == pytest.approx(5.0)


def test_the_stats_endpoint_filters_by_model(tenant_a, counters):
    assert tenant_a.client.get(URL, {"model": "other"}).json() == {"models": []}


def test_the_stats_endpoint_refuses_a_request_without_a_valid_key(anon_client, tenant_b, counters):
    assert anon_client.get(URL).status_code == 401
    api_key_revoke(api_key=tenant_b.tenant.api_keys.get())
    response = tenant_b.client.get(URL)
    assert response.status_code == 401
    assert response.json()["error"]["code"]


def test_the_command_prints_the_counters(counters):
    out = StringIO()
    call_command("embedding_stats", "--json", stdout=out)
    (row,) = json.loads(out.getvalue())["models"]
    assert row["near_hits"] == 2 and row["provider_calls"] == 3
    out = StringIO()
    call_command("embedding_stats", stdout=out)
    assert "text-embedding-3-small: lookups 20 (hit rate 50.0%)" in out.getvalue()


def test_tokens_are_counted_with_cl100k_base_by_default():
    assert tokens.count_tokens("hello world") == 2
    assert tokens.count_tokens("") == 0
    assert tokens.encoding_for("text-embedding-3-small").name.startswith("cl100k_base")


def test_token_counting_falls_back_to_characters_with_a_warning(monkeypatch, caplog):
    import tiktoken

    def unavailable(name: str) -> None:
        raise ValueError(f"no {name} here")

    tokens.encoding_for.cache_clear()
    monkeypatch.setattr(tiktoken, "get_encoding", unavailable)
    try:
        with caplog.at_level(logging.WARNING, logger="memory_app.embeddings"):
            assert tokens.count_tokens("abcdefghi", "some-model") == 3
        assert any("counting tokens as characters" in r.getMessage() for r in caplog.records)
    finally:
        tokens.encoding_for.cache_clear()


@pytest.mark.parametrize("value", ["0.5", "high"])
def test_an_out_of_range_dedup_threshold_stops_start_up(value):
    result = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; settings.DEBUG"],
        env={
            "DJANGO_SETTINGS_MODULE": "project.settings",
            "SECRET_KEY": "x",
            "SEMANTIC_DEDUP_THRESHOLD": value,
            "PGVECTOR_CHECK": "false",
            "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "SEMANTIC_DEDUP_THRESHOLD must be" in result.stderr
