"""The OpenAI provider against a stubbed HTTP API (respx): batching, order, retries, isolation."""

from __future__ import annotations

import hashlib
import json
import logging

import httpx
import numpy as np
import pytest
import respx
from django.test import override_settings

from memory_app.db.vectors import half_precision
from memory_app.embeddings import embed_texts
from memory_app.embeddings.cache.keys import CacheKeys
from memory_app.embeddings.cache.lookup import health
from memory_app.embeddings.cache.stats import embedding_stats_flush, stats_pending_reset
from memory_app.embeddings.openai_provider import backoff_delay
from memory_app.errors import ApplicationError
from memory_app.models import EmbeddingCacheEntry, EmbeddingCacheStats

BASE = "http://openai.test/v1"
OPENAI = {
    "EMBEDDING_PROVIDER": "openai",
    "EMBEDDING_MODEL": "text-embedding-3-small",
    "OPENAI_API_KEY": "sk-test",
    "OPENAI_BASE_URL": BASE,
    "OPENAI_EMBEDDING_BACKOFF_SECONDS": 0.0,
    "OPENAI_EMBEDDING_MAX_RETRIES": 2,
    "EMBEDDING_NEAR_DUP": "off",
}

KEYS = CacheKeys.of(None)  # the tenant-less partition these tests embed through


def fake_vector(text: str) -> list[float]:
    """What the stub server returns for a text: deterministic, unnormalised, 384 numbers."""
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    return (np.random.default_rng(seed).standard_normal(384) * 3).tolist()


def embeddings_reply(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    data = [
        {"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(body["input"])
    ]
    data.reverse()  # servers may answer out of order; `index` is what counts
    usage = {"prompt_tokens": len(body["input"]), "total_tokens": len(body["input"])}
    return httpx.Response(200, json={"object": "list", "data": data, "model": body["model"], "usage": usage})


@pytest.fixture(autouse=True)
def _fresh(db):  # type: ignore[no-untyped-def]
    stats_pending_reset()
    health.broken = False
    with override_settings(**OPENAI):
        yield
    stats_pending_reset()


@pytest.fixture
def api():  # type: ignore[no-untyped-def]
    with respx.mock(assert_all_called=False) as router:
        yield router


def sent_inputs(route: respx.Route) -> list[list[str]]:
    return [json.loads(call.request.content)["input"] for call in route.calls]


def expected(text: str) -> np.ndarray:
    """What embed_texts gives for the fake provider's vector: unit length, rounded to float16. Normalised
    as the provider does (a row of a matrix): another float32 norm may round a value the other way."""
    m = np.asarray([fake_vector(text)], dtype=np.float32)
    return half_precision(m / np.linalg.norm(m, axis=1, keepdims=True))[0]


@override_settings(OPENAI_EMBEDDING_BATCH_SIZE=2)
def test_texts_are_sent_in_batches_and_returned_in_input_order(api):
    route = api.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
    texts = [f"note number {i}" for i in range(5)]
    vectors = embed_texts(texts, tenant=None)
    assert sent_inputs(route) == [texts[0:2], texts[2:4], texts[4:5]]
    for text, row in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(row, expected(text), atol=1e-6)
    body = json.loads(route.calls[0].request.content)
    assert body["model"] == "text-embedding-3-small" and body["dimensions"] == 384
    assert route.calls[0].request.headers["authorization"] == "Bearer sk-test"
    embedding_stats_flush()
    stats = EmbeddingCacheStats.objects.get(model="text-embedding-3-small")
    assert (stats.misses, stats.provider_calls) == (5, 3)


@override_settings(OPENAI_EMBEDDING_MAX_TOKENS_PER_REQUEST=10)
def test_a_batch_never_passes_the_token_cap_per_request(api):
    route = api.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
    texts = ["one two three four", "five six seven eight", "nine ten eleven twelve"]  # 4 tokens each
    embed_texts(texts, tenant=None)
    assert sent_inputs(route) == [texts[0:2], texts[2:3]]


def test_cached_texts_are_not_sent_again(api):
    route = api.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
    embed_texts(["alpha", "beta"], tenant=None)
    vectors = embed_texts(["beta", "gamma", "ALPHA!"], tenant=None)
    assert sent_inputs(route) == [["alpha", "beta"], ["gamma"]]
    np.testing.assert_allclose(vectors[2], expected("alpha"), atol=1e-6)


def test_a_vector_cached_for_another_model_is_not_used(api):
    EmbeddingCacheEntry.objects.create(
        model="all-MiniLM-L6-v2",
        content_hash=KEYS.exact("shared text"),
        normalized_hash=KEYS.normalized("shared text"),
        embedding=np.ones(384, dtype=np.float32) / np.sqrt(384),
    )
    route = api.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
    vector = embed_texts(["shared text"], tenant=None)[0]
    assert route.call_count == 1
    np.testing.assert_allclose(vector, expected("shared text"), atol=1e-6)
    assert EmbeddingCacheEntry.objects.filter(content_hash=KEYS.exact("shared text")).count() == 2


def test_rate_limits_and_server_errors_are_retried(api):
    route = api.post(f"{BASE}/embeddings").mock(
        side_effect=[
            httpx.Response(429, json={"error": {"message": "slow down"}}, headers={"retry-after": "0"}),
            httpx.Response(502, json={"error": {"message": "bad gateway"}}),
            embeddings_reply,
        ]
    )
    vector = embed_texts(["retry me"], tenant=None)[0]
    assert route.call_count == 3
    np.testing.assert_allclose(vector, expected("retry me"), atol=1e-6)


def test_a_connection_error_is_retried(api):
    route = api.post(f"{BASE}/embeddings").mock(side_effect=[httpx.ConnectError("refused"), embeddings_reply])
    embed_texts(["connect again"], tenant=None)
    assert route.call_count == 2


def test_the_last_failed_retry_raises_a_clear_error_and_caches_nothing(api):
    route = api.post(f"{BASE}/embeddings").mock(return_value=httpx.Response(503, json={"error": {}}))
    with pytest.raises(ApplicationError) as raised:
        embed_texts(["never embedded"], tenant=None)
    assert raised.value.code == "embedding_provider_unavailable" and raised.value.status == 503
    assert "after 3 attempts" in raised.value.message
    assert route.call_count == 3  # OPENAI_EMBEDDING_MAX_RETRIES=2, and none from the SDK itself
    assert not EmbeddingCacheEntry.objects.exists()


def test_a_refused_request_is_not_retried(api):
    route = api.post(f"{BASE}/embeddings").mock(
        return_value=httpx.Response(400, json={"error": {"message": "dimensions not supported"}})
    )
    with pytest.raises(ApplicationError) as raised:
        embed_texts(["bad request"], tenant=None)
    assert raised.value.code == "embedding_provider_error" and route.call_count == 1


def test_a_reply_of_the_wrong_size_is_an_error(api):
    api.post(f"{BASE}/embeddings").mock(
        return_value=httpx.Response(
            200,
            json={"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.1] * 1536}]},
        )
    )
    with pytest.raises(ApplicationError, match="1536 dimensions"):
        embed_texts(["too wide"], tenant=None)


def test_backoff_doubles_and_respects_retry_after():
    assert 0.375 <= backoff_delay(0, base=0.5) <= 0.625
    assert 1.5 <= backoff_delay(2, base=0.5) <= 2.5
    assert backoff_delay(0, base=0.5, retry_after=7) == 7
    assert backoff_delay(0, base=0.5, retry_after=3600) == 30.0


# --- Near-duplicate reuse (tier 3): the local model as a proxy for the paid provider ----------
LONG = "I'm planning to visit my grandmother in Lisbon next summer with the whole family."
# Differs only in sentence punctuation: the one kind of difference the near tier may reuse across.
LONG_VARIANT = "I'm planning to visit my grandmother in Lisbon, next summer, with the whole family"
SWAPPED = (
    "Its southern shore was marshy , but the northern end of the island ( towards Richfield Springs ) "
    "had trees and vegetation .",
    "Its northern shore was marshy , but the southern end of the island ( toward Richfield Springs ) "
    "had trees and vegetation .",
)


@override_settings(EMBEDDING_NEAR_DUP="auto")
def test_a_near_identical_text_reuses_the_cached_embedding_without_a_request(api, caplog):
    route = api.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
    first = embed_texts([LONG], tenant=None)[0]
    with caplog.at_level(logging.INFO, logger="memory_app.embeddings"):
        second = embed_texts([LONG_VARIANT], tenant=None)[0]
    assert route.call_count == 1
    np.testing.assert_array_equal(first, second)
    (hit,) = [r.getMessage() for r in caplog.records if "semantic dedup hit" in r.getMessage()]
    assert KEYS.exact(LONG_VARIANT)[:16] in hit and KEYS.exact(LONG)[:16] in hit and "score=" in hit
    assert EmbeddingCacheEntry.objects.count() == 1  # reuse creates no row
    embedding_stats_flush()
    stats = EmbeddingCacheStats.objects.get(model="text-embedding-3-small")
    assert (stats.near_hits, stats.misses, stats.provider_calls) == (1, 1, 1)


@override_settings(EMBEDDING_NEAR_DUP="auto")
def test_swapped_words_are_embedded_even_when_the_proxy_finds_them_close(api, caplog):
    route = api.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
    embed_texts([SWAPPED[0]], tenant=None)
    with caplog.at_level(logging.INFO, logger="memory_app.embeddings"):
        vector = embed_texts([SWAPPED[1]], tenant=None)[0]
    assert route.call_count == 2
    np.testing.assert_allclose(vector, expected(SWAPPED[1]), atol=1e-6)
    (miss,) = [r.getMessage() for r in caplog.records if "semantic dedup miss" in r.getMessage()]
    assert "score=0.99" in miss  # MiniLM alone would have reused it


@override_settings(EMBEDDING_NEAR_DUP="auto")
def test_near_identical_texts_in_one_call_are_embedded_once(api):
    route = api.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
    vectors = embed_texts([LONG, "Something unrelated entirely.", LONG_VARIANT], tenant=None)
    assert sent_inputs(route) == [[LONG, "Something unrelated entirely."]]
    np.testing.assert_array_equal(vectors[0], vectors[2])


@override_settings(EMBEDDING_NEAR_DUP="auto")
def test_a_missing_ann_index_falls_back_to_the_hash_tiers_with_one_warning(api, caplog):
    from django.db import connection

    from memory_app.embeddings.cache.near import index_state

    route = api.post(f"{BASE}/embeddings").mock(side_effect=embeddings_reply)
    embed_texts([LONG], tenant=None)
    index_state.reset()
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute("DROP INDEX embcache_proxy_hnsw")
    try:
        with caplog.at_level(logging.WARNING, logger="memory_app.embeddings"):
            embed_texts([LONG_VARIANT], tenant=None)
            embed_texts(["Another new text."], tenant=None)
            again = embed_texts([LONG.upper()], tenant=None)  # the hash tiers still work
    finally:
        index_state.reset()
    assert route.call_count == 3
    np.testing.assert_allclose(again[0], expected(LONG), atol=1e-6)
    warnings = [r for r in caplog.records if "embcache_proxy_hnsw unusable" in r.getMessage()]
    assert len(warnings) == 1
