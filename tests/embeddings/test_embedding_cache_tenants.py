"""The embedding cache is private per tenant: no hit, counter or digest crosses tenants, and
forgetting a user removes the cache rows of their texts."""

from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from memory_app.embeddings import embed_texts
from memory_app.embeddings.cache.keys import CacheKeys
from memory_app.embeddings.cache.stats import embedding_stats_flush, stats_pending_reset
from memory_app.models import EmbeddingCacheEntry, EmbeddingCacheStats
from memory_app.services.store.forget import user_memories_delete
from tests.factories import TenantFactory

SECRET_TEXT = "Tenant A's user is negotiating to buy Acme Corp for 40 million"
STATS = "/api/v1/stats/embeddings"
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_counts():  # type: ignore[no-untyped-def]
    stats_pending_reset()
    yield
    stats_pending_reset()


def _counts(tenant) -> tuple[int, int, int, int]:  # type: ignore[no-untyped-def]
    embedding_stats_flush()
    row = EmbeddingCacheStats.objects.filter(tenant=tenant).first()
    if row is None:
        return (0, 0, 0, 0)
    return (row.exact_hits, row.normalized_hits, row.near_hits, row.misses)


def test_a_text_cached_by_one_tenant_is_a_miss_for_another():
    a, b = TenantFactory(), TenantFactory()
    embed_texts([SECRET_TEXT], tenant=a)
    embed_texts([SECRET_TEXT], tenant=b)
    embed_texts([SECRET_TEXT.upper()], tenant=b)  # nor by the normalised tier
    assert _counts(b) == (0, 1, 0, 1)  # b's own first copy is what the upper-case text hits
    assert _counts(a) == (0, 0, 0, 1)
    assert EmbeddingCacheEntry.objects.filter(tenant=a).count() == 1
    assert EmbeddingCacheEntry.objects.filter(tenant=b).count() == 1


@override_settings(EMBEDDING_NEAR_DUP="on")
def test_the_near_duplicate_tier_never_reuses_another_tenants_row():
    a, b = TenantFactory(), TenantFactory()
    embed_texts([SECRET_TEXT + "."], tenant=a)
    embed_texts([SECRET_TEXT.replace("for", "for,")], tenant=b)  # same skeleton, other tenant
    assert _counts(b) == (0, 0, 0, 1)


def test_cache_digests_are_keyed_per_tenant_and_never_the_plain_sha256():
    a, b = TenantFactory(), TenantFactory()
    embed_texts([SECRET_TEXT], tenant=a)
    embed_texts([SECRET_TEXT], tenant=b)
    digests = set(EmbeddingCacheEntry.objects.values_list("content_hash", flat=True))
    assert len(digests) == 2
    assert hashlib.sha256(SECRET_TEXT.encode()).hexdigest() not in digests
    assert CacheKeys.of(a.pk).exact(SECRET_TEXT) in digests


def test_a_tenant_cannot_learn_from_its_counters_whether_another_stored_a_text(tenant_a, tenant_b):
    """The side channel of the report: B searches A's text and watches its hit counters."""
    stored = tenant_a.client.post("/api/v1/memories", {"text": SECRET_TEXT, "user_id": "u1"}, format="json")
    assert stored.status_code == 201
    embedding_stats_flush()
    before = tenant_b.client.get(STATS).json()
    response = tenant_b.client.post(
        "/api/v1/memories/search", {"query": SECRET_TEXT, "user_id": "u1"}, format="json"
    )
    assert response.status_code == 200 and response.json()["results"] == []
    embedding_stats_flush()
    (row,) = tenant_b.client.get(STATS).json()["models"]
    assert (row["exact_hits"], row["normalized_hits"], row["near_hits"]) == (0, 0, 0)
    # B's query is counted; a local model's query vector is never cached (lookup.cached_embed_begin).
    assert row["misses"] == 1 and row["cache_entries"] == 0
    assert before == {"models": []}
    # A sees its own store only, untouched by B's search (its memory keeps the vector: no cache row).
    (own,) = tenant_a.client.get(STATS).json()["models"]
    assert (own["misses"], own["exact_hits"], own["cache_entries"]) == (1, 0, 0)


def test_staff_figures_are_the_sum_over_tenants():
    a, b = TenantFactory(), TenantFactory()
    embed_texts(["one text"], tenant=a)
    embed_texts(["another text", "one text"], tenant=b)
    embedding_stats_flush()
    out = StringIO()
    call_command("embedding_stats", stdout=out)
    assert "lookups 3" in out.getvalue() and "misses 3" in out.getvalue()


def test_forgetting_a_user_removes_the_cache_rows_of_their_texts(tenant_a):
    client = tenant_a.client
    # Searched for before they were stored: cache rows of their own (a stored text's vector is
    # kept by its memory, which goes with it).
    embed_texts([SECRET_TEXT, "User u1 likes tea"], tenant=tenant_a.tenant)
    for user, text in (("u1", SECRET_TEXT), ("u1", "User u1 likes tea"), ("u2", "User u1 likes tea")):
        assert (
            client.post("/api/v1/memories", {"text": text, "user_id": user}, format="json").status_code == 201
        )
    keys = CacheKeys.of(tenant_a.tenant.pk)
    assert EmbeddingCacheEntry.objects.filter(content_hash=keys.exact(SECRET_TEXT)).exists()
    user_memories_delete(tenant=tenant_a.tenant, user_id="u1")
    assert not EmbeddingCacheEntry.objects.filter(content_hash=keys.exact(SECRET_TEXT)).exists()
    # u2 still holds the other text: its row stays.
    assert EmbeddingCacheEntry.objects.filter(content_hash=keys.exact("User u1 likes tea")).exists()


def test_after_deletion_another_tenant_still_learns_nothing(tenant_a, tenant_b):
    tenant_a.client.post("/api/v1/memories", {"text": SECRET_TEXT, "user_id": "u1"}, format="json")
    assert tenant_a.client.delete("/api/v1/users/u1/memories").status_code == 200
    tenant_b.client.post("/api/v1/memories/search", {"query": SECRET_TEXT, "user_id": "u1"}, format="json")
    embedding_stats_flush()
    (row,) = tenant_b.client.get(STATS).json()["models"]
    assert row["exact_hits"] == 0 and row["misses"] == 1


def test_the_migration_rekeys_rows_of_stored_texts_per_tenant_and_drops_the_rest():
    import importlib

    import numpy as np
    from django.apps import apps
    from django.db import connection

    from tests.factories import MemoryFactory, unit_vector

    migration = importlib.import_module("memory_app.migrations.0008b_embcache_tenant")
    a, b = TenantFactory(), TenantFactory()
    MemoryFactory(tenant=a, text=SECRET_TEXT)
    MemoryFactory(tenant=b, text=SECRET_TEXT)
    legacy = lambda text: hashlib.sha256(text.encode()).hexdigest()  # noqa: E731 (the old key)
    for text, seed in ((SECRET_TEXT, 1), ("a deleted text or a query", 2)):
        EmbeddingCacheEntry.objects.create(
            model="m", content_hash=legacy(text), normalized_hash=legacy(text), embedding=unit_vector(seed)
        )

    class Editor:
        pass

    editor = Editor()
    editor.connection = connection  # type: ignore[attr-defined]
    migration.rekey(apps, editor)
    assert not EmbeddingCacheEntry.objects.filter(tenant__isnull=True).exists()
    for tenant in (a, b):
        keys = CacheKeys.of(tenant.pk)
        row = EmbeddingCacheEntry.objects.get(tenant=tenant)
        assert row.content_hash == keys.exact(SECRET_TEXT) and row.normalized_hash == keys.normalized(
            SECRET_TEXT
        )
        np.testing.assert_allclose(np.asarray(row.embedding), unit_vector(1), atol=1e-6)
