"""A local model's search query is answered by its own pass, without the embedding cache; any other
text, and a remote provider's query, goes through the cache first."""

from __future__ import annotations

import numpy as np
import pytest
import respx
from django.test import override_settings

from memory_app.db.vectors import half_precision
from memory_app.embeddings import embed_texts_begin
from memory_app.embeddings.cache import lookup
from memory_app.embeddings.cache.stats import embedding_stats_flush, stats_pending_reset
from memory_app.embeddings.local import local_embed
from memory_app.models import EmbeddingCacheStats
from tests.embeddings.test_embedding_openai import BASE, OPENAI, embeddings_reply


@pytest.fixture(autouse=True)
def _fresh_counters(db):  # type: ignore[no-untyped-def]
    stats_pending_reset()
    yield
    stats_pending_reset()


def _steps(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """ "pass" when the provider is started, "lookup" when the hash tiers are read, in order."""
    steps: list[str] = []
    begin, tiers = lookup.provider_embed_begin, lookup._hash_tiers

    def started(provider, texts, **options):  # type: ignore[no-untyped-def]
        steps.append("pass")
        return begin(provider, texts, **options)

    def read(*args):  # type: ignore[no-untyped-def]
        steps.append("lookup")
        return tiers(*args)

    monkeypatch.setattr(lookup, "provider_embed_begin", started)
    monkeypatch.setattr(lookup, "_hash_tiers", read)
    return steps


def test_a_local_models_query_runs_its_pass_without_a_lookup_and_other_texts_look_up_first(monkeypatch):
    steps = _steps(monkeypatch)
    embed_texts_begin(["Where does my sister live?"], tenant=None, query=True).finish()
    embed_texts_begin(["My sister lives in Lisbon."], tenant=None).finish()
    assert steps == ["pass", "lookup", "pass"]


def test_a_query_missing_the_cache_gets_the_vector_its_own_pass_gives():
    text = "Which city did the user move to in 2021?"
    vector = embed_texts_begin([text], tenant=None, query=True).finish()[0]
    np.testing.assert_allclose(vector, half_precision(local_embed([text], query=True)[0]), atol=1e-4)


def test_a_query_like_a_cached_text_gets_its_own_passes_vector_not_the_cached_row():
    cached = embed_texts_begin(["My dog is called Rex."], tenant=None).finish()[0]
    variant = "  my DOG is called rex!! "  # the cache's normalised tier would answer it
    vector = embed_texts_begin([variant], tenant=None, query=True).finish()[0]
    np.testing.assert_allclose(vector, half_precision(local_embed([variant], query=True)[0]), atol=1e-4)
    assert not np.allclose(vector, cached, atol=1e-4)
    embedding_stats_flush()
    stats = EmbeddingCacheStats.objects.get(model="all-MiniLM-L6-v2")
    assert (stats.normalized_hits, stats.misses) == (0, 2)


@respx.mock
def test_a_remote_provider_is_never_called_before_the_lookup_even_for_a_query(monkeypatch):
    route = respx.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
    with override_settings(**OPENAI):
        embed_texts_begin(["Tea, not coffee."], tenant=None).finish()
        steps = _steps(monkeypatch)
        embed_texts_begin(["Tea, not coffee."], tenant=None, query=True).finish()
    assert steps == ["lookup"] and route.call_count == 1


def test_a_local_models_query_gets_no_cache_row_and_any_other_text_does():
    from memory_app.models import EmbeddingCacheEntry

    embed_texts_begin(["Where does the user keep the spare key?"], tenant=None, query=True).finish()
    assert not EmbeddingCacheEntry.objects.exists()
    embed_texts_begin(["The spare key is under the blue pot."], tenant=None).finish()
    assert EmbeddingCacheEntry.objects.count() == 1


@respx.mock
def test_a_remote_providers_query_vector_is_cached_as_any_other():
    from memory_app.models import EmbeddingCacheEntry

    route = respx.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
    with override_settings(**OPENAI):
        embed_texts_begin(["Which tea does the user like?"], tenant=None, query=True).finish()
        embed_texts_begin(["Which tea does the user like?"], tenant=None, query=True).finish()
    assert EmbeddingCacheEntry.objects.count() == 1 and route.call_count == 1
