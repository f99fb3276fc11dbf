"""A hybrid search's full text on a pool thread of its own, beside the vector half."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from memory_app.embeddings.cache.keys import CacheKeys
from memory_app.embeddings.cache.stats import embedding_stats_flush, stats_pending_reset
from memory_app.models import EmbeddingCacheEntry, EmbeddingCacheStats
from memory_app.selectors.search import beside
from memory_app.selectors.search.beside import run_beside
from memory_app.selectors.search.candidates import vector_candidate_rows
from memory_app.selectors.search.query import SearchFilters, memory_search, query_embedding_of
from memory_app.selectors.search.rows import similarities_of
from tests.factories import MemoryFactory, TenantFactory

TEXTS = [
    "User adopted a grey cat named Pixel in March",
    "User's sister lives in Lisbon and teaches piano",
    "User prefers green tea over coffee in the morning",
    "User is training for the Berlin marathon in September",
    "User's laptop is a 2019 ThinkPad with a cracked hinge",
]


def _hits(tenant, query: str) -> list[tuple[int, float | None]]:  # type: ignore[no-untyped-def]
    """Each hit's id and BM25 score (its final score also decays with the clock between searches)."""
    result = memory_search(tenant=tenant, query=query, filters=SearchFilters(user_id="u1"), limit=5)
    return [(hit.memory.pk, hit.lexical_score) for hit in result.hits]


def _threads_used(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The names of the threads the search's BM25 ran on, recorded as it runs."""
    from memory_app.selectors.search import query

    names: list[str] = []
    original = query._lexical

    def recording(**kwargs):  # type: ignore[no-untyped-def]
        names.append(threading.current_thread().name)
        return original(**kwargs)

    monkeypatch.setattr(query, "_lexical", recording)
    return names


def _similarities(tenant, vector) -> dict[int, float]:  # type: ignore[no-untyped-def]
    """pgvector's similarity to `vector` of every row of scope u1."""
    _, rows = vector_candidate_rows(
        tenant=tenant, filters=SearchFilters(user_id="u1"), query_embedding=vector, k=100, plan="exact"
    )
    return similarities_of(rows)


def _texts_searched_inline(settings):  # type: ignore[no-untyped-def]
    """A tenant holding TEXTS, the sister question's hits with BM25 inline, and the pool back on."""
    tenant = TenantFactory()
    for text in TEXTS:
        MemoryFactory(tenant=tenant, user_id="u1", text=text)
    settings.SEARCH_LEXICAL_THREADS = 0
    inline_hits = _hits(tenant, "Which city does the sister live in?")
    settings.SEARCH_LEXICAL_THREADS = 2
    return tenant, inline_hits


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_bm25_runs_on_a_pool_thread_and_ranks_as_inline(settings, monkeypatch):
    tenant = TenantFactory()
    for text in TEXTS:
        MemoryFactory(tenant=tenant, user_id="u1", text=text)
    used = _threads_used(monkeypatch)
    settings.SEARCH_LEXICAL_THREADS = 2
    beside_hits = _hits(tenant, "Which city does the sister live in?")
    settings.SEARCH_LEXICAL_THREADS = 0
    inline_hits = _hits(tenant, "Which city does the sister live in?")

    assert used[0].startswith("search-beside") and used[1] == threading.current_thread().name
    assert beside_hits == inline_hits
    assert beside_hits[0][0] == tenant.memories.get(text=TEXTS[1]).pk


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("first", ["bm25", "vector"])
def test_whichever_half_finishes_first_the_ranking_and_each_similarity_are_the_same(
    settings, monkeypatch, first
):
    from memory_app.selectors.search import query

    tenant, inline_hits = _texts_searched_inline(settings)
    done = threading.Event()
    original_lexical, original_get = query._lexical, query.QueryEmbedding.get

    def lexical(**kwargs):  # type: ignore[no-untyped-def]
        if first == "vector":
            assert done.wait(10)
        try:
            return original_lexical(**kwargs)
        finally:
            done.set()

    def vector(self):  # type: ignore[no-untyped-def]
        if first == "bm25":
            assert done.wait(10)
        try:
            return original_get(self)
        finally:
            done.set()

    monkeypatch.setattr(query, "_lexical", lexical)
    monkeypatch.setattr(query.QueryEmbedding, "get", vector)
    question = "Which city does the sister live in?"

    result = memory_search(tenant=tenant, query=question, filters=SearchFilters(user_id="u1"), limit=5)

    assert [(hit.memory.pk, hit.lexical_score) for hit in result.hits] == inline_hits
    assert result.hits[0].memory.pk == tenant.memories.get(text=TEXTS[1]).pk
    expected = _similarities(tenant, query_embedding_of(question, tenant))
    assert {hit.memory.pk: hit.vector_score for hit in result.hits} == pytest.approx(
        {hit.memory.pk: expected[hit.memory.pk] for hit in result.hits}, abs=1e-6
    )


@pytest.mark.django_db
def test_inside_a_transaction_bm25_runs_inline_and_sees_the_callers_uncommitted_rows(monkeypatch):
    tenant = TenantFactory()
    memory = MemoryFactory(tenant=tenant, user_id="u1", text="User's locker code is 4471")
    used = _threads_used(monkeypatch)

    result = memory_search(
        tenant=tenant, query="locker code", filters=SearchFilters(user_id="u1"), limit=5, mode="hybrid"
    )

    assert used == [threading.current_thread().name]
    assert [hit.memory.pk for hit in result.hits] == [memory.pk]
    assert result.hits[0].lexical_score is not None


@pytest.mark.django_db(transaction=True)
def test_a_local_models_query_is_counted_after_the_search_returns_and_gets_no_cache_row(settings):
    settings.SEARCH_LEXICAL_THREADS = 2
    tenant = TenantFactory()
    MemoryFactory(tenant=tenant, user_id="u1", text=TEXTS[0])
    query = "What is the name of the grey cat?"
    stats_pending_reset()

    _hits(tenant, query)
    beside.beside_close()  # waits for the detached count

    embedding_stats_flush()
    assert EmbeddingCacheStats.objects.get(tenant=tenant).misses == 1
    key = CacheKeys.of(tenant.pk).exact(query)
    assert not EmbeddingCacheEntry.objects.filter(content_hash=key).exists()


@pytest.mark.django_db(transaction=True)
def test_a_detached_call_that_fails_is_logged_and_raises_nowhere(settings, caplog):
    settings.SEARCH_LEXICAL_THREADS = 1

    def fails() -> None:
        raise RuntimeError("cache down")

    with caplog.at_level(logging.WARNING, logger=beside.__name__):
        run_beside(fails, detached=True)
        deadline = time.monotonic() + 5
        while "cache down" not in caplog.text:
            assert time.monotonic() < deadline
            time.sleep(0.01)


@pytest.mark.django_db(transaction=True)
def test_with_every_pool_thread_busy_the_call_runs_inline(settings):
    settings.SEARCH_LEXICAL_THREADS = 1
    release = threading.Event()
    busy = run_beside(release.wait)
    try:
        second = run_beside(lambda: threading.current_thread().name)
        assert busy.on_thread and not second.on_thread
        assert second.result() == threading.current_thread().name
    finally:
        release.set()
        busy.result()


def _backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_after_the_pool_is_closed_the_next_call_opens_a_connection_of_its_own_again(settings):
    settings.SEARCH_LEXICAL_THREADS = 1
    first = run_beside(_backend_pid).result()
    beside.beside_close()
    second = run_beside(_backend_pid)

    assert second.on_thread
    assert second.result() != first


@pytest.mark.django_db(transaction=True)
def test_an_inline_call_started_for_later_runs_when_the_caller_says_and_only_once(settings):
    settings.SEARCH_LEXICAL_THREADS = 0
    calls: list[str] = []
    later = run_beside(lambda: calls.append("ran") or len(calls), inline_later=True)
    assert calls == [] and not later.on_thread
    later.run_inline()
    later.run_inline()
    assert later.result() == 1 and calls == ["ran"]


@pytest.mark.django_db(transaction=True)
def test_a_pool_connection_the_database_dropped_fails_nothing_and_the_call_runs_on_a_new_one(settings):
    from django.db import connection

    settings.SEARCH_LEXICAL_THREADS = 1
    calls: list[int] = []

    def call() -> int:
        calls.append(1)
        return _backend_pid()

    first = run_beside(call).result()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    calls.clear()

    second = run_beside(call).result()

    assert second != first
    assert len(calls) == 2  # the first run met the dropped connection, the second a new one


@pytest.mark.django_db(transaction=True)
def test_a_statement_that_fails_on_a_live_pool_connection_is_not_run_again(settings):
    from django.db import OperationalError, connection

    settings.SEARCH_LEXICAL_THREADS = 1
    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = 1; SELECT pg_sleep(0.05)")

    run_beside(_backend_pid).result()  # the pool thread's connection is open
    with pytest.raises(OperationalError):
        run_beside(call).result()
    assert len(calls) == 1


@pytest.mark.django_db(transaction=True)
def test_a_pool_connection_is_not_checked_with_a_statement_of_its_own_before_each_call(settings, monkeypatch):
    from django.db.backends.postgresql.base import DatabaseWrapper

    settings.SEARCH_LEXICAL_THREADS = 1
    run_beside(_backend_pid).result()
    checks: list[str] = []
    original = DatabaseWrapper.is_usable

    def recording(self):  # type: ignore[no-untyped-def]
        checks.append(threading.current_thread().name)
        return original(self)

    monkeypatch.setattr(DatabaseWrapper, "is_usable", recording)
    run_beside(_backend_pid).result()
    run_beside(_backend_pid).result()
    assert checks == []


def _start_order(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """What a search starts, in order: "vector" (the query's embedding) and "bm25" (its thread)."""
    from memory_app.selectors.search import query

    started: list[str] = []
    original_embed, original_beside = query.QueryEmbedding.__init__, query.run_beside

    def embedding(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        started.append("vector")
        original_embed(self, *args, **kwargs)

    def side(call, **kwargs):  # type: ignore[no-untyped-def]
        started.append("bm25" if kwargs.get("inline_later") else "other")
        return original_beside(call, **kwargs)

    monkeypatch.setattr(query.QueryEmbedding, "__init__", embedding)
    monkeypatch.setattr(query, "run_beside", side)
    return started


@pytest.mark.django_db
def test_with_the_local_model_the_querys_vector_is_started_before_bm25(settings, monkeypatch):
    tenant, inline_hits = _texts_searched_inline(settings)
    started = _start_order(monkeypatch)
    assert _hits(tenant, "Which city does the sister live in?") == inline_hits
    assert [s for s in started if s != "other"] == ["vector", "bm25"]


@pytest.mark.django_db
def test_a_provider_that_answers_inside_the_call_starts_after_bm25(settings, monkeypatch):
    from memory_app.embeddings import query_embedding_starts_beside

    tenant, inline_hits = _texts_searched_inline(settings)
    settings.EMBEDDING_LOCAL_BATCHING = False  # the local pass then runs inside the call
    assert not query_embedding_starts_beside(tenant)
    started = _start_order(monkeypatch)
    assert _hits(tenant, "Which city does the sister live in?") == inline_hits
    assert [s for s in started if s != "other"] == ["bm25", "vector"]


@pytest.mark.django_db
def test_only_the_packaged_local_model_on_its_batcher_starts_beside(settings):
    from memory_app.embeddings.providers import DEFAULT_MODEL, get_provider, starts_beside

    assert starts_beside(get_provider(DEFAULT_MODEL))
    settings.EMBEDDING_LOCAL_BATCHING = False
    assert not starts_beside(get_provider(DEFAULT_MODEL))
    settings.EMBEDDING_LOCAL_BATCHING = True
    settings.EMBEDDING_PROVIDER = "openai"
    settings.EMBEDDING_MODEL = "text-embedding-3-small"
    settings.OPENAI_API_KEY = "sk-test"
    assert not starts_beside(get_provider("text-embedding-3-small"))
