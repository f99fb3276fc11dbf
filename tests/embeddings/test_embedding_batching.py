"""The local model's micro-batcher: concurrent callers share forward passes and get their own rows."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from django.test import override_settings

from memory_app.embeddings.batching import MicroBatcher, RequestsInFlight
from memory_app.embeddings.local import local_embed
from memory_app.embeddings.providers import LocalProvider


def test_concurrent_callers_share_forward_passes_and_each_gets_its_own_rows_in_order() -> None:
    batcher = MicroBatcher(local_embed, wait_seconds=0.02, max_batch=32)
    texts = [[f"note {i} about hiking", f"note {i} about cooking"] for i in range(8)]
    results: dict[int, np.ndarray] = {}
    start = threading.Barrier(8)

    def caller(i: int) -> None:
        start.wait()
        results[i] = batcher.embed(texts[i])

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert batcher.texts == 16 and batcher.batches < 8  # several callers per forward pass
    for i, pair in enumerate(texts):
        np.testing.assert_allclose(results[i], local_embed(pair), atol=1e-5)


def test_a_failing_forward_pass_raises_in_every_caller_of_its_batch() -> None:
    def broken(texts: list[str], *, query: bool = False) -> np.ndarray:
        raise RuntimeError("model crashed")

    batcher = MicroBatcher(broken, wait_seconds=0.0, max_batch=8)
    with pytest.raises(RuntimeError, match="model crashed"):
        batcher.embed(["a text"])
    with pytest.raises(RuntimeError, match="model crashed"):  # the batcher thread is still serving
        batcher.embed(["another text"])


def test_a_call_of_a_full_batch_or_more_is_embedded_directly() -> None:
    calls: list[int] = []

    def counting(texts: list[str], *, query: bool = False) -> np.ndarray:
        calls.append(len(texts))
        return np.zeros((len(texts), 384), dtype=np.float32)

    batcher = MicroBatcher(counting, wait_seconds=0.0, max_batch=4)
    assert batcher.embed([f"t{i}" for i in range(10)]).shape == (10, 384)
    assert calls == [10] and batcher.batches == 0


@pytest.mark.parametrize("batching", [True, False])
def test_the_local_provider_gives_the_same_vectors_with_and_without_batching(batching: bool) -> None:
    provider = LocalProvider(model="all-MiniLM-L6-v2", dimensions=384)
    texts = ["User prefers morning workouts", "Normal resting heart rate is 60-100 bpm"]
    with override_settings(EMBEDDING_LOCAL_BATCHING=batching):
        vectors = provider.embed(texts)
    np.testing.assert_allclose(vectors, local_embed(texts), atol=1e-5)


def test_a_submitted_text_is_embedded_while_the_caller_goes_on_and_waited_for_later() -> None:
    started, release = threading.Event(), threading.Event()

    def slow(texts: list[str], *, query: bool = False) -> np.ndarray:
        started.set()
        release.wait(10)
        return local_embed(texts)

    batcher = MicroBatcher(slow, wait_seconds=0.0, max_batch=8)
    wait = batcher.submit(["User prefers morning workouts"])  # returns before the pass ends
    assert started.wait(10)
    release.set()
    np.testing.assert_allclose(wait(), local_embed(["User prefers morning workouts"]), atol=1e-5)


def test_a_lone_request_runs_at_once_rather_than_waiting_for_a_companion() -> None:
    batcher = MicroBatcher(
        lambda texts, query=False: np.zeros((len(texts), 2)),
        wait_seconds=5.0,
        max_batch=8,
        in_flight=lambda: 1,
    )
    t0 = time.monotonic()
    batcher.embed(["only me"])
    assert time.monotonic() - t0 < 2.0  # the 5 s wait was not taken


def test_requests_in_progress_elsewhere_make_the_batcher_wait_for_them() -> None:
    seen: list[int] = []

    def record(texts: list[str], *, query: bool = False) -> np.ndarray:
        seen.append(len(texts))
        return np.zeros((len(texts), 2))

    batcher = MicroBatcher(record, wait_seconds=5.0, max_batch=8, in_flight=lambda: 2)
    first = batcher.submit(["first"])
    time.sleep(0.2)  # the first request waits: another is in progress
    assert seen == []
    second = batcher.submit(["second"])
    first(), second()
    assert seen == [2]  # one pass for both


def test_the_in_flight_count_follows_the_request_signals() -> None:
    counter = RequestsInFlight()
    counter.started()
    counter.started()
    counter.finished()
    assert counter() == 1
    counter.finished()
    counter.finished()  # never below zero
    assert counter() == 0


def test_queries_and_stored_texts_never_share_a_pass() -> None:
    passes: list[tuple[list[str], bool]] = []

    def record(texts: list[str], *, query: bool = False) -> np.ndarray:
        passes.append((list(texts), query))
        return np.zeros((len(texts), 2))

    # Companions are possible (more requests in flight than a batch holds): the batcher waits for them.
    batcher = MicroBatcher(record, wait_seconds=0.2, max_batch=8, in_flight=lambda: 3)
    first = batcher.submit(["a search query"], query=True)
    stored, second = batcher.submit(["a stored text"]), batcher.submit(["another query"], query=True)
    first(), stored(), second()
    # In queue order, each kind in a pass of its own: a query's pass runs another model.
    assert passes == [(["a search query"], True), (["a stored text"], False), (["another query"], True)]


def test_a_search_querys_pass_hands_nothing_to_the_judges_token_encoder() -> None:
    from memory_app.judge.signals.alignment import token_encoder

    query, stored = "Where did the user go hiking last spring?", "The user went hiking in Wales last spring."
    local_embed([query], query=True)
    local_embed([stored])
    known = token_encoder().known([query, stored])
    assert query not in known and stored in known
