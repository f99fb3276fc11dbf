"""One local-model process shared by all of a server's workers: forward passes batched across them.

Why: one short text costs the local model ~15 ms of CPU alone and ~5.6 ms in a batch of eight
(bench/request_cost.py), and a batch only forms from requests that wait at the same moment. With
gunicorn's two processes of four threads, each process's micro-batcher saw so few of them that a
forward pass held 1.3-1.5 texts on average under eight concurrent clients. The model server takes
the texts of every worker into one micro-batcher (embeddings/batching.py): 1.4-2.0 texts per pass
in the same runs, a CPU saving too small to show on the shared machine it was measured on, hence
opt-in (docs/PERFORMANCE.md, "Load").

`serve(path)` runs in the model process (`manage.py embedding_server`, started by gunicorn's master
when EMBEDDING_SHARED_MODEL=true: project/embedding_server.py): a Unix socket, one thread per client
connection, all feeding one MicroBatcher. `SharedModelClient.embed` is what a worker's LocalProvider
calls: one connection per thread, kept. The answer carries the sentence vectors and the content-word
vectors the same forward pass computed (judge/alignment.forward_pass_tokens), which the client hands
to its own token encoder, so a stored text is still never run through the model a second time for
the judge.

Failure never fails a request: when the socket is missing, refuses, breaks or the model process
reports an error, the worker embeds in process as it would without a model server (a warning is
logged) and tries the socket again after RETRY_SECONDS.

Wire format, both directions: two big-endian uint32 (header length, body length), a JSON header,
a binary body. Request header {"texts": [...]}, no body. Answer header {"rows", "dimensions",
"tokens": [[text index, stems, names, words], ...]} or {"error": message}; body: the float32
vectors (rows x dimensions), then each text's float16 word vectors in the header's order.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memory_app.judge.alignment import TOKEN_DIMENSIONS, TextTokens, token_encoder

log = logging.getLogger(__name__)

SOCKET_ENV = "EMBEDDING_SHARED_SOCKET"
RETRY_SECONDS = 5.0
# Longer than any forward pass of a request's texts under load; a model process that takes longer
# is treated as gone and the worker embeds in process.
TIMEOUT_SECONDS = 30.0
_LENGTHS = struct.Struct("!II")


class ModelServerError(Exception):
    """The model process could not answer (its own error, or a broken connection)."""


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def server_stats(path: str) -> dict[str, int]:
    """The model server's counts: forward passes run and the texts they held."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5.0)
        sock.connect(path)
        send_frame(sock, {"stats": True})
        return {k: int(v) for k, v in recv_frame(sock)[0].items()}


def send_frame(sock: socket.socket, header: dict[str, Any], body: bytes = b"") -> None:
    head = json.dumps(header).encode()
    sock.sendall(_LENGTHS.pack(len(head), len(body)) + head + body)


def recv_frame(sock: socket.socket) -> tuple[dict[str, Any], bytes]:
    head_size, body_size = _LENGTHS.unpack(_read_exactly(sock, _LENGTHS.size))
    header = json.loads(_read_exactly(sock, head_size))
    return header, _read_exactly(sock, body_size)


def encode_answer(vectors: np.ndarray, tokens: dict[int, TextTokens]) -> tuple[dict[str, Any], bytes]:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    parts = [vectors.tobytes()]
    described = []
    for index, found in sorted(tokens.items()):
        described.append([index, list(found.stems), list(found.names), len(found.stems)])
        parts.append(np.ascontiguousarray(found.vectors, dtype=np.float16).tobytes())
    header = {"rows": vectors.shape[0], "dimensions": vectors.shape[1], "tokens": described}
    return header, b"".join(parts)


def decode_answer(
    header: dict[str, Any], body: bytes, texts: Sequence[str]
) -> tuple[np.ndarray, dict[str, TextTokens]]:
    if "error" in header:
        raise ModelServerError(str(header["error"]))
    rows, dimensions = int(header["rows"]), int(header["dimensions"])
    if rows != len(texts):
        raise ModelServerError(f"{rows} vectors for {len(texts)} texts")
    size = rows * dimensions * 4
    vectors = np.frombuffer(body, dtype=np.float32, count=rows * dimensions).reshape(rows, dimensions)
    tokens = {}
    offset = size
    for index, stems, names, words in header["tokens"]:
        count = int(words) * TOKEN_DIMENSIONS
        word_vectors = np.frombuffer(body, dtype=np.float16, count=count, offset=offset)
        offset += count * 2
        # Float16 at the source (alignment._word_vectors), so the round trip is exact.
        tokens[texts[index]] = TextTokens(
            stems=tuple(stems),
            names=tuple(bool(n) for n in names),
            vectors=word_vectors.astype(np.float32).reshape(int(words), TOKEN_DIMENSIONS),
        )
    return vectors.copy(), tokens


class _Handler(socketserver.BaseRequestHandler):
    embed: Callable[[list[str]], np.ndarray]
    batcher: Any = None

    def handle(self) -> None:
        while True:
            try:
                header, _ = recv_frame(self.request)
            except (ConnectionError, OSError, ValueError):
                return  # the worker went away (or sent garbage): drop the connection
            if not isinstance(header, dict):
                return
            if header.get("stats"):  # for measurements: how full the shared forward passes were
                batcher = type(self).batcher
                counts = {"batches": batcher.batches, "texts": batcher.texts} if batcher else {}
                send_frame(self.request, counts)
                continue
            texts = [str(t) for t in header.get("texts", [])]
            try:
                vectors = type(self).embed(texts)
                known = token_encoder().known(texts)
                answer = encode_answer(vectors, {i: known[t] for i, t in enumerate(texts) if t in known})
            except Exception as exc:  # the worker falls back to its own model
                log.exception("embedding server: embedding %d texts failed", len(texts))
                answer = ({"error": f"{type(exc).__name__}: {exc}"}, b"")
            try:
                send_frame(self.request, *answer)
            except OSError:
                return


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = True


def make_server(path: str, embed: Callable[[list[str]], np.ndarray], *, batcher: Any = None) -> _Server:
    """The model server on a Unix socket at `path` (replaced if it exists), only for this user.
    `batcher`: the MicroBatcher behind `embed`, whose counts a stats request reads."""
    if os.path.exists(path):
        os.unlink(path)
    handler = type("Handler", (_Handler,), {"embed": staticmethod(embed), "batcher": batcher})
    old_umask = os.umask(0o177)
    try:
        return _Server(path, handler)
    finally:
        os.umask(old_umask)


def serve(path: str, *, exit_with_parent: bool = False) -> None:
    """Run the model server until the process is stopped: the local model, one micro-batcher.
    `exit_with_parent`: stop when the process that started this one is gone (a gunicorn master
    killed with SIGKILL never stops its children)."""
    from memory_app.embeddings.local import local_batcher, local_embed

    local_embed(["warm-up"])
    batcher = local_batcher()
    server = make_server(path, batcher.embed, batcher=batcher)
    if exit_with_parent:
        parent = os.getppid()

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1.0)
            log.warning("embedding server: parent process %d gone, stopping", parent)
            server.shutdown()

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    log.info("embedding server listening on %s", path)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        if os.path.exists(path):
            os.unlink(path)


class SharedModelClient:
    """A worker's side: one connection per thread to the model server at `path`."""

    def __init__(self, path: str, fallback: Callable[[list[str]], np.ndarray]) -> None:
        self.path = path
        self.fallback = fallback
        self._local = threading.local()
        self._down_until = 0.0
        self._warned = False

    def _connection(self) -> socket.socket:
        sock = getattr(self._local, "sock", None)
        if sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(TIMEOUT_SECONDS)
            try:
                sock.connect(self.path)
            except OSError:
                sock.close()
                raise
            self._local.sock = sock
        return sock

    def _drop_connection(self) -> None:
        sock = getattr(self._local, "sock", None)
        self._local.sock = None
        if sock is not None:
            sock.close()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        if time.monotonic() < self._down_until:
            return self.fallback(texts)
        try:
            sock = self._connection()
            send_frame(sock, {"texts": list(texts)})
            vectors, tokens = decode_answer(*recv_frame(sock), texts)
        except Exception as exc:  # whatever went wrong on the way, the request must not fail for it
            self._drop_connection()
            self._down_until = time.monotonic() + RETRY_SECONDS
            if not self._warned:
                log.warning(
                    "embedding server at %s unavailable (%s): embedding in process, retrying in %.0f s",
                    self.path,
                    exc,
                    RETRY_SECONDS,
                )
                self._warned = True
            return self.fallback(texts)
        if self._warned:
            log.info("embedding server at %s answers again", self.path)
            self._warned = False
        if tokens:
            token_encoder().offer(tokens)
        return vectors


_clients: dict[str, SharedModelClient] = {}
_clients_lock = threading.Lock()


def shared_client(path: str, fallback: Callable[[list[str]], np.ndarray]) -> SharedModelClient:
    with _clients_lock:
        client = _clients.get(path)
        if client is None:
            client = _clients[path] = SharedModelClient(path, fallback)
        return client
