"""The scope bench/peer.py fills for both systems at 10 k and 100 k: real English texts with their
real MiniLM vectors, computed once and kept under var/peer-corpus/ (about 10 ms a text on one torch
thread, so 100 k take a quarter of an hour the first time).

Texts are bench/support/load_data.py's: an STS-B test sentence with a pseudo-word name ("Kalomi
mentioned that ..."), never repeated. One forward pass a text gives both its sentence vector and its
content-word vectors (the token rows this service's judge reads, as a real store writes them), so a
loaded row is what a store through the API would have written. Queries and the texts stored during
the measurement come from the same source after the corpus, so none is a corpus text.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .benchenv import ROOT
from .load_data import TextSource

CHUNK = 2000
# Bump when the texts or the stored token form change: the cached chunks are then recomputed.
VERSION = 1
# Bump when the rows loaded from the corpus change form (3: token rows with the fact reading):
# the databases are then loaded again, from the same cached chunks.
LOAD_VERSION = 3
STORE_TEMPLATE = "{name} mentioned that {sentence}."
QUERY_TEMPLATE = "{sentence} ({name})"


@dataclass
class Corpus:
    texts: list[str]
    vectors: np.ndarray  # (n, 384) float32, unit
    token_words: list[int]
    token_bytes: list[bytes]

    def head(self, count: int) -> Corpus:
        return Corpus(
            self.texts[:count], self.vectors[:count], self.token_words[:count], self.token_bytes[:count]
        )

    def files(self, count: int) -> tuple[Path, Path]:
        """The first `count` texts (JSON) and vectors (.npy) as files, for mem0's process."""
        texts, vectors = _directory() / f"texts-{count}.json", _directory() / f"vectors-{count}.npy"
        texts.write_text(json.dumps(self.texts[:count]))
        np.save(vectors, self.vectors[:count])
        return texts, vectors


def _directory() -> Path:
    from memory_app.judge.signals.alignment import WORD_BYTES

    return ROOT / "var" / "peer-corpus" / f"v{VERSION}-w{WORD_BYTES}"


def _texts(count: int, source: TextSource) -> list[str]:
    return [source.next(STORE_TEMPLATE) for _ in range(count)]


def _embed_chunk(texts: list[str]) -> Corpus:
    from memory_app.embeddings.local import local_embed
    from memory_app.judge.signals.alignment import token_encoder, tokens_bytes

    vectors, words, data = [], [], []
    for start in range(0, len(texts), 64):
        batch = texts[start : start + 64]
        vectors.append(local_embed(batch))
        # The pass above offered its token vectors to the encoder: no second forward pass.
        for tokens in token_encoder().tokens(batch):
            words.append(len(tokens.stems))
            data.append(tokens_bytes(tokens))
    return Corpus(texts, np.concatenate(vectors).astype(np.float32), words, data)


def corpus(count: int, *, log: Callable[[str], None]) -> Corpus:
    """The first `count` texts (a multiple of CHUNK, or fewer than one chunk) with their vectors."""
    directory = _directory()
    directory.mkdir(parents=True, exist_ok=True)
    source = TextSource(seed=34)
    out = Corpus([], np.zeros((0, 384), dtype=np.float32), [], [])
    started = time.perf_counter()
    for index in range((count + CHUNK - 1) // CHUNK):
        texts = _texts(CHUNK, source)
        path = directory / f"chunk-{index:03d}.npz"
        if path.exists():
            saved = np.load(path)
            data = saved["token_data"].tobytes()
            offsets = np.concatenate([[0], np.cumsum(saved["token_lengths"])])
            chunk = Corpus(
                texts,
                saved["vectors"],
                saved["token_words"].tolist(),
                [data[offsets[i] : offsets[i + 1]] for i in range(len(texts))],
            )
        else:
            chunk = _embed_chunk(texts)
            np.savez(
                path,
                vectors=chunk.vectors,
                token_words=np.asarray(chunk.token_words, dtype=np.int32),
                token_lengths=np.asarray([len(b) for b in chunk.token_bytes], dtype=np.int64),
                token_data=np.frombuffer(b"".join(chunk.token_bytes), dtype=np.uint8),
            )
            took = time.perf_counter() - started
            log(f"  embedded texts {index * CHUNK:,}-{(index + 1) * CHUNK:,} ({took:.0f} s)")
        out.texts += chunk.texts
        out.vectors = np.concatenate([out.vectors, chunk.vectors])
        out.token_words += chunk.token_words
        out.token_bytes += chunk.token_bytes
    n = min(count, len(out.texts))
    return Corpus(out.texts[:n], out.vectors[:n], out.token_words[:n], out.token_bytes[:n])


def incoming(stores: int, queries: int, *, after: int) -> tuple[list[str], list[str]]:
    """Texts to store and queries, none a text of the first `after` corpus texts: from the
    corpus's own source past its end."""
    source = TextSource(seed=34)
    _texts(((after + CHUNK - 1) // CHUNK) * CHUNK, source)
    return _texts(stores, source), [source.next(QUERY_TEMPLATE) for _ in range(queries)]


def query_sentence(query: str) -> str:
    """The sentence a query (QUERY_TEMPLATE) asks about, without its name."""
    return re.sub(r" \([^)]*\)$", "", query)


def states(text: str, query: str) -> bool:
    """Whether a stored text (STORE_TEMPLATE) states the query's sentence, under any name: the
    corpus repeats each sentence under many names, so those rows are the query's relevant rows."""
    return text.endswith(f" mentioned that {query_sentence(query)}.")


def stating_rows(tenant_id: int, query: str) -> set[int]:
    """This service's rows of the tenant stating the query's sentence (under any name)."""
    from memory_app.db import fetch_all

    escaped = query_sentence(query).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    found = fetch_all(
        "SELECT id FROM memory_app_memory WHERE tenant_id = %s AND text LIKE %s",
        [tenant_id, f"% mentioned that {escaped}."],
    )
    return {row[0] for row in found}


def loaded(cursor, rows: int) -> int | None:  # type: ignore[no-untyped-def]
    """The highest preloaded id when this database holds `rows` of this VERSION and LOAD_VERSION,
    else None."""
    cursor.execute("SELECT to_regclass('bench_peer_meta') IS NOT NULL")
    if not cursor.fetchone()[0]:
        return None
    cursor.execute(
        "SELECT max_id FROM bench_peer_meta WHERE version = %s AND rows = %s", [_loaded_form(), rows]
    )
    row = cursor.fetchone()
    return int(row[0]) if row else None


def _loaded_form() -> int:
    return VERSION * 100 + LOAD_VERSION


def load_ours(chosen: Corpus, *, tenant_id: int, user_id: str, log: Callable[[str], None]) -> None:
    """This service's rows for `chosen`, in one scope: as bench/support/load_data.py loads (indexes
    dropped, COPY, indexes built again, VACUUM ANALYZE), with the corpus's real vectors and token
    rows, so the judge reads stored vectors as it does for a stored memory."""
    from datetime import UTC, datetime, timedelta

    from django.db import connection
    from pgvector.psycopg import register_vector

    from memory_app.judge.facts import reading_encode
    from memory_app.judge.signals.alignment import text_digest
    from memory_app.text import normalized_hash

    from .benchdb import memory_indexes_dropped
    from .store_data import COLUMNS, MODEL

    connection.ensure_connection()
    raw = connection.connection
    register_vector(raw)
    started = time.perf_counter()
    with raw.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS bench_peer_meta")
        cur.execute("TRUNCATE memory_app_memory CASCADE")
    raw.commit()
    base = datetime(2025, 1, 1, tzinfo=UTC)
    with memory_indexes_dropped(raw, log=log) as cur:
        with cur.copy(f"COPY memory_app_memory ({COLUMNS}) FROM STDIN") as copy:
            for i, (text, vector) in enumerate(zip(chosen.texts, chosen.vectors, strict=True)):
                created = base + timedelta(seconds=i)
                copy.write_row(
                    (
                        tenant_id, "episodic", user_id, "", "default", "", text, normalized_hash(text),
                        vector, MODEL, [], [], "", "", "", "", "", "{}", created, created, False,
                        "active", 0, 0, 0, 0.5,
                    )
                )  # fmt: skip
        raw.commit()
        log(f"  copied {len(chosen.texts):,} rows ({time.perf_counter() - started:.0f} s)")
    position = {text: i for i, text in enumerate(chosen.texts)}
    with raw.cursor() as cur:
        cur.execute("SELECT id, text FROM memory_app_memory WHERE tenant_id = %s", [tenant_id])
        rows = cur.fetchall()
        with cur.copy(
            "COPY memory_app_memorytokens (memory_id, tenant_id, text_digest, words, vectors, fact_reading) "
            "FROM STDIN"
        ) as copy:
            for memory_id, text in rows:
                i = position[text]
                copy.write_row(
                    (
                        memory_id, tenant_id, text_digest(text), chosen.token_words[i],
                        chosen.token_bytes[i], reading_encode(text),
                    )
                )  # fmt: skip
        cur.execute("CREATE TABLE bench_peer_meta (version integer, rows integer, max_id bigint)")
        cur.execute(
            "INSERT INTO bench_peer_meta SELECT %s, %s, max(id) FROM memory_app_memory",
            [_loaded_form(), len(rows)],
        )
    raw.commit()
    with raw.cursor() as cur:
        cur.execute("VACUUM ANALYZE memory_app_memory")
        cur.execute("VACUUM ANALYZE memory_app_memorytokens")
    log(f"  this service: {len(rows):,} rows loaded in {time.perf_counter() - started:.0f} s")
