"""A stored memory's vector is kept once: its row answers the embedding cache for its text."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import override_settings

from memory_app.embeddings import embed_text, embed_texts
from memory_app.embeddings.cache.lookup import health
from memory_app.embeddings.cache.stats import embedding_stats_flush, stats_pending_reset
from memory_app.models import EmbeddingCacheEntry, EmbeddingCacheStats, Memory
from memory_app.overrides import StoreOverrides
from memory_app.services.store.forget import memory_purge
from memory_app.services.store.types import MemoryInput
from memory_app.services.store.write import memory_store
from memory_app.text import normalized_hash
from tests.factories import TenantFactory, unit_vector

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_counters():  # type: ignore[no-untyped-def]
    stats_pending_reset()
    health.broken = False
    yield
    stats_pending_reset()


def _store(tenant, text: str, **fields) -> Memory:  # type: ignore[no-untyped-def]
    [outcome] = memory_store(
        tenant=tenant,
        items=[MemoryInput(text=text, user_id="u", **fields)],
        options=StoreOverrides(deduplicate=False),
    )
    return Memory.objects.get(pk=outcome.memory_id)


def _stats(tenant) -> EmbeddingCacheStats:  # type: ignore[no-untyped-def]
    embedding_stats_flush()
    return EmbeddingCacheStats.objects.get(tenant=tenant)


def test_a_stored_text_gets_no_cache_row_of_its_own():
    tenant = TenantFactory()
    _store(tenant, "My sister lives in Lisbon.")
    assert not EmbeddingCacheEntry.objects.filter(tenant=tenant).exists()


def test_the_stored_memory_answers_a_later_embed_of_its_text_as_an_exact_hit():
    tenant = TenantFactory()
    memory = _store(tenant, "My sister lives in Lisbon.")
    vector = embed_text("My sister lives in Lisbon.", tenant=tenant)
    np.testing.assert_array_equal(vector, np.asarray(memory.embedding, dtype=np.float32))
    assert not EmbeddingCacheEntry.objects.filter(tenant=tenant).exists()
    stats = _stats(tenant)
    assert (stats.exact_hits, stats.misses, stats.provider_calls) == (1, 1, 1)


def test_a_case_and_punctuation_variant_of_a_stored_text_is_a_normalised_hit():
    tenant = TenantFactory()
    memory = _store(tenant, "My dog is called Rex.")
    vector = embed_text("  my DOG is called rex!! ", tenant=tenant)
    np.testing.assert_array_equal(vector, np.asarray(memory.embedding, dtype=np.float32))
    assert _stats(tenant).normalized_hits == 1


def test_a_stored_text_in_another_scope_is_a_hit_and_its_store_embeds_nothing():
    tenant = TenantFactory()
    _store(tenant, "The gym opens at six.")
    memory_store(tenant=tenant, items=[MemoryInput(text="The gym opens at six.", user_id="other")])
    stats = _stats(tenant)
    assert (stats.exact_hits, stats.misses) == (1, 1)


def test_another_tenants_memory_never_answers():
    owner, other = TenantFactory(), TenantFactory()
    _store(owner, "My sister lives in Lisbon.")
    embed_text("My sister lives in Lisbon.", tenant=other)
    assert _stats(other).misses == 1


def test_a_forgotten_memory_no_longer_answers_and_its_text_is_cached_again():
    tenant = TenantFactory()
    memory = _store(tenant, "Coffee keeps me awake.")
    memory_purge(tenant=tenant, memory_id=memory.pk)
    embed_text("Coffee keeps me awake.", tenant=tenant)
    assert _stats(tenant).misses == 2
    assert EmbeddingCacheEntry.objects.filter(tenant=tenant).count() == 1


def test_a_text_stored_with_a_clients_vector_embeds_nothing():
    tenant = TenantFactory()
    _store(tenant, "Tea, not coffee.", embedding=unit_vector(3))
    embedding_stats_flush()
    assert not EmbeddingCacheStats.objects.filter(tenant=tenant).exists()
    assert not EmbeddingCacheEntry.objects.filter(tenant=tenant).exists()


def test_a_search_query_is_still_cached():
    tenant = TenantFactory()
    embed_texts(["where does my sister live"], tenant=tenant)
    assert EmbeddingCacheEntry.objects.filter(tenant=tenant).count() == 1


@override_settings(EMBEDDING_NEAR_DUP="on")
def test_with_the_near_tier_on_a_stored_text_keeps_its_cache_row_for_the_proxy_vector():
    tenant = TenantFactory()
    _store(tenant, "My sister lives in Lisbon.")
    assert EmbeddingCacheEntry.objects.filter(tenant=tenant, proxy_embedding__isnull=False).count() == 1


def test_a_memory_filled_by_the_embedding_sweep_gets_no_cache_row_and_answers_for_its_text():
    from memory_app.services.store.embedding_backfill import memory_embeddings_fill

    tenant = TenantFactory()
    text = "My sister lives in Lisbon."
    memory = Memory.objects.create(tenant=tenant, text=text, text_hash=normalized_hash(text), user_id="u")
    assert memory_embeddings_fill(memory_ids=[memory.pk]) == 1
    assert not EmbeddingCacheEntry.objects.filter(tenant=tenant).exists()
    embed_text("My sister lives in Lisbon.", tenant=tenant)
    assert _stats(tenant).exact_hits == 1
