"""The embedding cache with the real local model: tiers, order, model isolation, degradation."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from django.db import connection
from django.test import override_settings

from memory_app.db.vectors import half_precision
from memory_app.embeddings import embed_text, embed_texts
from memory_app.embeddings.cache.keys import CacheKeys
from memory_app.embeddings.cache.lookup import health
from memory_app.embeddings.cache.stats import embedding_stats_flush, stats_pending_reset
from memory_app.embeddings.local import local_embed
from memory_app.models import EmbeddingCacheEntry, EmbeddingCacheStats
from tests.factories import unit_vector

MODEL = "all-MiniLM-L6-v2"

KEYS = CacheKeys.of(None)  # the tenant-less partition these tests embed through


@pytest.fixture(autouse=True)
def _fresh_counters(db):  # type: ignore[no-untyped-def]
    stats_pending_reset()
    health.broken = False
    yield
    stats_pending_reset()
    health.broken = False


def _flushed_stats() -> EmbeddingCacheStats:
    embedding_stats_flush()
    return EmbeddingCacheStats.objects.get(model=MODEL)


def test_rows_are_normalised_and_in_input_order():
    texts = ["I run every morning.", "My sister lives in Lisbon.", "Coffee keeps me awake."]
    vectors = embed_texts(texts, tenant=None)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    # Unit vectors rounded to float16 (db.vectors.half_precision): the norm moves by up to ~1e-4.
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    np.testing.assert_array_equal(vectors, half_precision(vectors))
    # A batch gives each text the vector it gets alone, in the caller's order.
    for text, row in zip(texts, vectors, strict=True):
        # A batch's float32 may differ in the last bits, so a value can round to the next float16.
        np.testing.assert_allclose(row, half_precision(local_embed([text])[0]), atol=1e-4)


def test_an_empty_list_gives_an_empty_matrix():
    assert embed_texts([], tenant=None).shape == (0, 384)


def test_a_repeated_text_is_an_exact_hit_and_stores_no_new_row():
    first = embed_text("The gym opens at six.", tenant=None)
    rows = EmbeddingCacheEntry.objects.count()
    again = embed_text("The gym opens at six.", tenant=None)
    assert EmbeddingCacheEntry.objects.count() == rows == 1
    np.testing.assert_array_equal(first, again)
    stats = _flushed_stats()
    assert (stats.exact_hits, stats.misses, stats.provider_calls) == (1, 1, 1)
    assert EmbeddingCacheEntry.objects.get().hit_count == 1


def test_a_case_whitespace_and_punctuation_variant_is_a_normalised_hit():
    original = embed_text("My dog is called Rex.", tenant=None)
    variant = embed_text("  my DOG is called rex!! ", tenant=None)
    np.testing.assert_array_equal(original, variant)
    assert EmbeddingCacheEntry.objects.count() == 1
    stats = _flushed_stats()
    assert (stats.normalized_hits, stats.misses) == (1, 1)


def test_identical_and_normalised_equal_texts_in_one_call_are_embedded_once():
    texts = ["Tea, not coffee.", "Water.", "Tea, not coffee.", "tea,  not COFFEE"]
    vectors = embed_texts(texts, tenant=None)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_array_equal(vectors[0], vectors[3])
    assert EmbeddingCacheEntry.objects.count() == 2
    stats = _flushed_stats()
    assert (stats.misses, stats.exact_hits, stats.normalized_hits, stats.provider_calls) == (2, 1, 1, 1)
    assert stats.tokens_avoided > 0 and stats.tokens_embedded > 0


def test_a_cached_vector_of_another_model_is_never_reused():
    text = "The meeting moved to Thursday."
    foreign = unit_vector(7)
    EmbeddingCacheEntry.objects.create(
        model="text-embedding-3-small",
        content_hash=KEYS.exact(text),
        normalized_hash=KEYS.normalized(text),
        embedding=foreign,
    )
    vector = embed_text(text, tenant=None)
    assert float(vector @ foreign) < 0.5
    np.testing.assert_array_equal(vector, half_precision(local_embed([text])[0]))
    assert EmbeddingCacheEntry.objects.filter(model=MODEL).count() == 1


def test_a_broken_cache_table_costs_one_warning_and_no_error(caplog):
    table = EmbeddingCacheEntry._meta.db_table
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute(f"ALTER TABLE {table} RENAME TO broken_cache")
    with caplog.at_level(logging.WARNING, logger="memory_app.embeddings"):
        first = embed_texts(["Still works.", "Also still works."], tenant=None)
        second = embed_texts(["Still works."], tenant=None)
    np.testing.assert_allclose(first[0], second[0], atol=1e-5)
    warnings = [r for r in caplog.records if "embedding cache unavailable" in r.getMessage()]
    assert len(warnings) == 1
    # The caller's transaction is intact: it can go on querying.
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


@override_settings(EMBEDDING_CACHE_ENABLED=False)
def test_with_the_cache_off_every_text_goes_to_the_provider():
    embed_texts(["One.", "One."], tenant=None)
    assert EmbeddingCacheEntry.objects.count() == 0
    stats = _flushed_stats()
    assert (stats.misses, stats.exact_hits) == (2, 0)


def test_statistics_wait_for_the_callers_commit(django_capture_on_commit_callbacks):
    with (
        override_settings(EMBEDDING_STATS_FLUSH_SECONDS=0),
        django_capture_on_commit_callbacks(execute=False) as callbacks,
    ):
        embed_texts(["Counted after commit."], tenant=None)
    assert not EmbeddingCacheStats.objects.filter(model=MODEL).exists()
    assert callbacks, "a flush is scheduled on commit"
    for callback in callbacks:
        callback()
    assert EmbeddingCacheStats.objects.get(model=MODEL).misses == 1


def test_a_flush_writes_each_model_in_one_update(django_assert_max_num_queries):
    embed_texts(["a b c", "d e f", "a b c", "A B C!"], tenant=None)
    embed_texts(["a b c"], tenant=None)
    # SET LOCAL, the UPDATE of the counters (plus one get_or_create on first use), the UPDATE of
    # the rows' hit counts, inside one transaction: never one statement per text.
    with django_assert_max_num_queries(8):
        embedding_stats_flush()
    stats = EmbeddingCacheStats.objects.get(model=MODEL)
    assert (stats.exact_hits, stats.normalized_hits, stats.misses) == (2, 1, 2)


@override_settings(EMBEDDING_STATS_LOG_EVERY=3)
def test_a_summary_line_is_logged_every_n_texts(caplog):
    with caplog.at_level(logging.INFO, logger="memory_app.embeddings"):
        embed_texts(["one", "two"], tenant=None)
        embed_texts(["one", "three"], tenant=None)
        embed_texts(["four"], tenant=None)
    summaries = [r.getMessage() for r in caplog.records if "embedding cache summary" in r.getMessage()]
    assert len(summaries) == 1
    assert "texts=4" in summaries[0] and "exact=1" in summaries[0]


@pytest.mark.django_db(transaction=True)
def test_a_new_text_on_its_own_is_cached_in_one_round_trip_with_a_durable_session_after(settings) -> None:  # type: ignore[no-untyped-def]
    from django.test.utils import CaptureQueriesContext

    settings.EMBEDDING_STATS_FLUSH_SECONDS = 3600  # no statistics flush inside the measured call

    with CaptureQueriesContext(connection) as queries:
        embed_texts(["a text cached on its own, outside any transaction"], tenant=None)
    table = EmbeddingCacheEntry._meta.db_table
    inserts = [q["sql"] for q in queries.captured_queries if f'INSERT INTO "{table}"' in q["sql"]]
    assert len(inserts) == 1 and "synchronous_commit" in inserts[0]
    assert not [q for q in queries.captured_queries if q["sql"] in ("BEGIN", "COMMIT")]
    assert EmbeddingCacheEntry.objects.filter(tenant=None).count() == 1
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"
    # A concurrent writer's row for the same text is kept, and the second insert is no error.
    embed_texts(["a text cached on its own, outside any transaction"], tenant=None)
    assert EmbeddingCacheEntry.objects.filter(tenant=None).count() == 1


def test_both_hash_tiers_are_read_in_one_statement_and_an_exact_row_wins() -> None:
    from django.test.utils import CaptureQueriesContext

    embed_texts(["The deadline is Friday."], tenant=None)
    with CaptureQueriesContext(connection) as queries:
        embed_texts(["The deadline is Friday.", "the deadline is friday", "a new text"], tenant=None)
    reads = [q for q in queries.captured_queries if q["sql"].lstrip("(").startswith("SELECT")]
    assert len(reads) == 1
    assert EmbeddingCacheEntry.objects.filter(tenant=None).count() == 2  # only "a new text" added
