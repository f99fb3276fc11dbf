"""The tenant bench/load.py serves: N memories over U users, in a database of its own, kept between
runs; and the texts its clients send.

Rows are loaded the way bench/support/store_data.py loads them (indexes dropped, COPY, indexes rebuilt,
VACUUM ANALYZE): synthetic unit vectors around 1,000 centres and pseudo-word texts, 1,000 rows per
user for the full size, each with its token row (bench/support/tokens_data.py: synthetic unit vectors per
content word, as a real store keeps the judge's vectors). What clients send is real English (STS-B
test sentences, or pseudo-word sentences when ../shared/data is missing), made unique per request
so that every store and every query is an embedding-cache miss: each request pays the local model,
the worst case.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from .benchdb import memory_indexes_dropped
from .store_data import COLUMNS, MODEL, WORDS, around, centres, row_text
from .tokens_data import copy_tokens

# 2: token rows (bench/support/tokens_data.py); 3: fillfactor 70 (migration 0012); 4: int8 token rows
# 5: fillfactor 75 (migration 0019); 6: the memory vectors as halfvec (migration 0020); 7: fillfactor
# 80 (migration 0021); 8: token rows with the fact reading (migration 0022)
DATA_VERSION = 8
TENANT_SLUG = "bench-load"
STSB = Path(__file__).resolve().parents[3] / "shared" / "data" / "stsbenchmark_test.tsv"


def database_name(rows: int) -> str:
    return f"memory_bench_load_{rows}"


def user_id(index: int) -> str:
    return f"user-{index:04d}"


def loaded_max_id(cursor) -> int | None:  # type: ignore[no-untyped-def]
    """The highest loaded id when this size and version are loaded, else None."""
    cursor.execute("SELECT to_regclass('bench_load_meta') IS NOT NULL")
    if not cursor.fetchone()[0]:
        return None
    cursor.execute("SELECT max_id FROM bench_load_meta WHERE version = %s", [DATA_VERSION])
    row = cursor.fetchone()
    return int(row[0]) if row else None


def load(rows: int, users: int, tenant_id: int, *, log: Callable[[str], None]) -> None:
    from django.db import connection
    from pgvector.psycopg import register_vector

    from memory_app.text import normalized_hash

    connection.ensure_connection()
    raw = connection.connection
    register_vector(raw)
    rng = np.random.default_rng(rows)
    cents = centres()
    t0 = time.perf_counter()
    with raw.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS bench_load_meta")
        cur.execute("TRUNCATE memory_app_memory CASCADE")
    raw.commit()
    with memory_indexes_dropped(raw, log=log) as cur:
        base = datetime(2025, 1, 1, tzinfo=UTC)
        which = rng.integers(0, len(cents), rows)
        vectors = around(cents[which], rng)
        with cur.copy(f"COPY memory_app_memory ({COLUMNS}) FROM STDIN") as copy:
            for i in range(rows):
                text, created = row_text(i, int(which[i])), base + timedelta(seconds=i)
                copy.write_row(
                    (
                        tenant_id, "episodic", user_id(i % users), "", "default", "", text,
                        normalized_hash(text), vectors[i], MODEL, [], [], "", "", "", "", "", "{}",
                        created, created, False, "active", 0, 0, 0, 0.5,
                    )
                )  # fmt: skip
        raw.commit()
        log(f"  copied {rows:,} rows over {users} users ({time.perf_counter() - t0:.0f} s)")
        copy_tokens(raw, tenant_id=tenant_id, log=log)
    with raw.cursor() as cur:
        cur.execute("CREATE TABLE bench_load_meta (version integer NOT NULL, max_id bigint NOT NULL)")
        cur.execute("INSERT INTO bench_load_meta SELECT %s, max(id) FROM memory_app_memory", [DATA_VERSION])
        raw.commit()
    with raw.cursor() as cur:
        cur.execute("VACUUM ANALYZE memory_app_memory")
    log(f"  loaded in {time.perf_counter() - t0:.0f} s")


def reset(tenant_id: int, max_id: int) -> None:
    """Remove what earlier runs stored and every cached embedding, so each run starts alike."""
    from django.db import connection

    from memory_app.models import (
        DuplicateCluster,
        EmbeddingCacheEntry,
        EmbeddingCacheStats,
        Memory,
        MemoryChange,
    )

    memories = Memory.objects.filter(tenant_id=tenant_id)
    DuplicateCluster.objects.filter(tenant_id=tenant_id).delete()
    MemoryChange.objects.filter(tenant_id=tenant_id).delete()
    memories.exclude(status="active").update(superseded_by=None)
    memories.filter(pk__gt=max_id).update(superseded_by=None)
    memories.filter(pk__gt=max_id).delete()
    memories.filter(pk__lte=max_id).exclude(status="active").update(status="active")
    memories.filter(access_count__gt=0).update(access_count=0, last_accessed_at=None)
    EmbeddingCacheEntry.objects.all().delete()
    EmbeddingCacheStats.objects.all().delete()
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE memory_app_memory")


def sentences() -> list[str]:
    """Distinct real sentences (STS-B test), or pseudo-word ones without the data folder."""
    if STSB.exists():
        out: dict[str, None] = {}
        with STSB.open(newline="") as handle:
            for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                for text in row[5:7]:
                    if len(text.split()) >= 4:
                        out.setdefault(text.strip(), None)
        return list(out)
    rng = np.random.default_rng(5)
    return [" ".join(WORDS[j] for j in rng.integers(0, len(WORDS), 10)) for _ in range(2000)]


class TextSource:
    """Unique texts: sentence k with pseudo-word name n, in a seeded order never repeated in a run."""

    def __init__(self, seed: int) -> None:
        self.sentences = sentences()
        self.rng = np.random.default_rng(seed)
        self.used: set[tuple[int, int]] = set()

    def next(self, template: str) -> str:
        while True:
            pair = (int(self.rng.integers(len(self.sentences))), int(self.rng.integers(len(WORDS))))
            if pair not in self.used:
                self.used.add(pair)
                name = WORDS[pair[1]].capitalize()
                return template.format(name=name, sentence=self.sentences[pair[0]].rstrip("."))
