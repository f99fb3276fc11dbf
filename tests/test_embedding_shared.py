"""The model process a server's workers share (embeddings/shared.py): same vectors, same word
vectors for the judge, and a worker that never fails a request when the model process is gone."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from django.test import override_settings

from memory_app.embeddings.local import local_embed
from memory_app.embeddings.providers import get_provider
from memory_app.embeddings.shared import (
    SharedModelClient,
    decode_answer,
    encode_answer,
    make_server,
    server_stats,
)
from memory_app.judge.alignment import TextTokens, token_encoder

TEXTS = ["Maria moved to Lisbon in 2019.", "The invoice total is -200 EUR.", "🥜 allergy"]


def _not_called(texts: list[str]) -> np.ndarray:
    raise AssertionError("the worker embedded in process although the model server answered")


@pytest.fixture
def server_at() -> Iterator[Callable[..., str]]:
    """Start a model server on a fresh socket (short path: Unix sockets allow ~100 bytes)."""
    directory = tempfile.mkdtemp(prefix="emb-", dir="/tmp")
    servers = []

    def start(embed: Callable[[list[str]], np.ndarray], batcher: object = None) -> str:
        path = str(Path(directory) / f"{len(servers)}.sock")
        server = make_server(path, embed, batcher=batcher)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return path

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
    shutil.rmtree(directory, ignore_errors=True)


def test_a_worker_gets_the_model_servers_vectors_for_every_text_in_order(server_at) -> None:
    path = server_at(local_embed)
    client = SharedModelClient(path, fallback=_not_called)
    vectors = client.embed(list(TEXTS))
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, local_embed(list(TEXTS)), atol=1e-6)
    # The connection is kept and reused by the same thread.
    np.testing.assert_allclose(client.embed([TEXTS[1]])[0], vectors[1], atol=1e-6)


def test_the_word_vectors_of_the_forward_pass_survive_the_trip_exactly() -> None:
    local_embed(list(TEXTS))  # the forward pass offers its word vectors to the encoder
    known = token_encoder().known(list(TEXTS))
    assert set(known) == set(TEXTS)
    vectors = np.arange(3 * 384, dtype=np.float32).reshape(3, 384)
    header, body = encode_answer(vectors, {i: known[t] for i, t in enumerate(TEXTS)})
    got_vectors, got_tokens = decode_answer(header, body, list(TEXTS))
    np.testing.assert_array_equal(got_vectors, vectors)
    for text in TEXTS:
        sent, got = known[text], got_tokens[text]
        assert isinstance(got, TextTokens)
        assert (got.stems, got.names) == (sent.stems, sent.names)
        np.testing.assert_array_equal(got.vectors, sent.vectors)


def test_a_missing_model_server_costs_no_request_the_worker_embeds_itself() -> None:
    calls: list[list[str]] = []

    def in_process(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return local_embed(texts)

    client = SharedModelClient("/tmp/no-such-dir/model.sock", fallback=in_process)
    vectors = client.embed(["a text"])
    np.testing.assert_allclose(vectors, local_embed(["a text"]), atol=1e-6)
    client.embed(["another text"])  # within the retry delay: not even tried
    assert calls == [["a text"], ["another text"]]


def test_an_error_in_the_model_server_falls_back_to_the_workers_own_model(server_at) -> None:
    def broken(texts: list[str]) -> np.ndarray:
        raise RuntimeError("model crashed")

    client = SharedModelClient(server_at(broken), fallback=local_embed)
    np.testing.assert_allclose(client.embed(["a text"]), local_embed(["a text"]), atol=1e-6)


def test_the_model_server_counts_its_forward_passes(server_at) -> None:
    class Counting:
        batches, texts = 0, 0

        def embed(self, texts: list[str]) -> np.ndarray:
            self.batches += 1
            self.texts += len(texts)
            return local_embed(texts)

    counting = Counting()
    path = server_at(counting.embed, counting)
    SharedModelClient(path, fallback=_not_called).embed(["one", "two"])
    assert server_stats(path) == {"batches": 1, "texts": 2}


def test_the_local_provider_uses_the_model_server_when_a_socket_is_configured(server_at) -> None:
    seen: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.append(texts)
        return local_embed(texts)

    path = server_at(embed)
    with override_settings(EMBEDDING_SHARED_SOCKET=path):
        vectors = get_provider().embed(["served by the model process"])
    assert seen == [["served by the model process"]]
    np.testing.assert_allclose(vectors, local_embed(["served by the model process"]), atol=1e-6)


def test_gunicorns_master_starts_the_model_process_for_its_workers_and_stops_it(monkeypatch) -> None:
    from project import embedding_server

    monkeypatch.setenv("EMBEDDING_SHARED_MODEL", "true")
    monkeypatch.setenv("EMBEDDING_TORCH_THREADS", "1")
    embedding_server.start()
    try:
        path = embedding_server.os.environ.get(embedding_server.SOCKET_ENV)
        assert path and Path(path).exists()
        process = embedding_server._process
        vectors = SharedModelClient(path, fallback=_not_called).embed(list(TEXTS))
        np.testing.assert_allclose(vectors, local_embed(list(TEXTS)), atol=1e-5)
    finally:
        embedding_server.stop()
    assert process is not None and process.poll() is not None
    assert not Path(path).parent.exists() and embedding_server.SOCKET_ENV not in embedding_server.os.environ


def test_the_model_process_is_opt_in_and_only_for_the_local_provider(monkeypatch) -> None:
    from project import embedding_server

    monkeypatch.delenv("EMBEDDING_SHARED_MODEL", raising=False)
    monkeypatch.delenv("EMBEDDING_PROVIDER", raising=False)
    assert not embedding_server.enabled()
    monkeypatch.setenv("EMBEDDING_SHARED_MODEL", "true")
    assert embedding_server.enabled()
    monkeypatch.setenv("EMBEDDING_PROVIDER", "openai")
    assert not embedding_server.enabled()
