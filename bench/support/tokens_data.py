"""Token rows (memory_app_memorytokens) for the benchmark loaders, written after their COPY.

A real store keeps each memory's content-word vectors (models.MemoryTokens), so the judge reads them
instead of running the token model; a loaded benchmark table must have them too, or the benchmark
would measure a store that pays a forward pass per stored text. Synthetic texts get synthetic
vectors, as their sentence embeddings are synthetic: one unit vector per content word of
`spelled(text)`, seeded by its stem (the same word has the same vector everywhere), kept in the
stored form the encoder's are (`alignment.tokens_bytes`: int8 codes and a float16 scale per word).
Texts in `real` (real sentences with MiniLM sentence vectors) get the local model's own token
vectors.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable

import numpy as np

CHUNK = 20_000
_by_stem: dict[str, np.ndarray] = {}


def _stem_vector(stem: str) -> np.ndarray:
    vector = _by_stem.get(stem)
    if vector is None:
        seed = int.from_bytes(hashlib.sha256(stem.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
        vector = v / np.linalg.norm(v)
        _by_stem[stem] = vector
    return vector


def synthetic_row(text: str) -> tuple[int, bytes]:
    """(words, stored bytes) of a synthetic text: a seeded unit vector per content word."""
    from memory_app.judge.signals.alignment import TextTokens, spelled, tokens_bytes

    stems, names = spelled(text)
    if not stems:
        return 0, b""
    vectors = np.stack([_stem_vector(s) for s in stems])
    return len(stems), tokens_bytes(TextTokens(stems, names, vectors))


def real_rows(texts: Iterable[str]) -> dict[str, tuple[int, bytes]]:
    """(words, bytes) of real sentences from the local model (the encoder's own vectors)."""
    from memory_app.judge.signals.alignment import token_encoder, tokens_bytes

    texts = list(dict.fromkeys(texts))
    out = {}
    for start in range(0, len(texts), 256):
        batch = texts[start : start + 256]
        for text, tokens in zip(batch, token_encoder().tokens(batch), strict=True):
            out[text] = (len(tokens.stems), tokens_bytes(tokens))
    return out


def copy_tokens(raw, *, tenant_id: int, log: Callable[[str], None], real: Iterable[str] = ()) -> int:  # type: ignore[no-untyped-def]
    """One token row per memory of the tenant (the memories' COPY is committed), by COPY."""
    from memory_app.judge.facts import reading_encode
    from memory_app.judge.signals.alignment import text_digest

    started = time.perf_counter()
    known = real_rows(real)
    written = 0
    last = 0
    with raw.cursor() as cur:
        cur.execute("DELETE FROM memory_app_memorytokens WHERE tenant_id = %s", [tenant_id])
        while True:
            cur.execute(
                "SELECT id, text FROM memory_app_memory WHERE tenant_id = %s AND id > %s "
                "ORDER BY id LIMIT %s",
                [tenant_id, last, CHUNK],
            )
            rows = cur.fetchall()
            if not rows:
                break
            with cur.copy(
                "COPY memory_app_memorytokens (memory_id, tenant_id, text_digest, words, vectors, "
                "fact_reading) FROM STDIN"
            ) as copy:
                for memory_id, text in rows:
                    words, data = known.get(text) or synthetic_row(text)
                    copy.write_row(
                        (memory_id, tenant_id, text_digest(text), words, data, reading_encode(text))
                    )
            written += len(rows)
            last = rows[-1][0]
        raw.commit()
    log(f"  token rows for {written:,} memories ({time.perf_counter() - started:.0f} s)")
    return written
