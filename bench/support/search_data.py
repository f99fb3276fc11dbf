"""Synthetic memory tables for bench/search.py, kept in their own databases between runs.

A table of N rows holds scopes of very different sizes, interleaved on disk as a live service
writes them: many users of ~1 k episodic memories, a few users of ~20 k, and one semantic
namespace of N/10 rows. Vectors are 384-dimension points in a two-level mixture (50 topics of 40
subtopics: cosine ~0.64 within a subtopic, ~0.39 within a topic, ~0 across), each row's subtopic
drawn independently of its scope, so a scope's rows are scattered over the whole space (the hard
case for a filtered approximate index).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from .tokens_data import copy_tokens

DIM = 384
TOPIC_CENTRES = 50
CENTRES = 2000  # subtopics, 40 per topic
SUBTOPIC_NOISE = 0.8  # subtopic around its topic: cosine ~0.78
NOISE = 0.75  # row around its subtopic: cosine ~0.8
TOPICS = 100  # each row one topic: a topic filter keeps ~1 % of a scope
# 3: token rows (bench/support/tokens_data.py); 4: int8 token rows; 5: the memory vectors as halfvec
# (migration 0020)
DATA_VERSION = 5
MODEL = "all-MiniLM-L6-v2"
BENCH_TENANT = "bench-search"
# Rebuilt after the load: one index build is far cheaper than a million incremental inserts.
LOAD_DROPPED_INDEXES = (
    "memory_scope_idx",
    "memory_namespace_scope_idx",
    "memory_tenant_id_idx",
    "memory_search_gin",
    "memory_topics_gin",
    "memory_entities_gin",
    "memory_embedding_hnsw",
)


@dataclass(frozen=True)
class Spec:
    rows: int
    namespace_rows: int
    large_users: int
    large_user_rows: int
    small_user_rows: int = 1000
    seed: int = 7
    version: int = DATA_VERSION
    small_users: int = field(init=False)

    def __post_init__(self) -> None:
        rest = self.rows - self.namespace_rows - self.large_users * self.large_user_rows
        object.__setattr__(self, "small_users", rest // self.small_user_rows)

    @property
    def database(self) -> str:
        return f"memory_bench_search_{self.rows}"


SPECS = {
    50_000: Spec(rows=50_000, namespace_rows=10_000, large_users=1, large_user_rows=10_000),
    100_000: Spec(rows=100_000, namespace_rows=10_000, large_users=2, large_user_rows=20_000),
    1_000_000: Spec(rows=1_000_000, namespace_rows=100_000, large_users=5, large_user_rows=20_000),
}


def centres(seed: int) -> np.ndarray:
    """The subtopic centres (unit vectors), 40 around each of 50 topic centres."""
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((TOPIC_CENTRES, DIM)).astype(np.float32)
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    return around(np.repeat(topics, CENTRES // TOPIC_CENTRES, axis=0), rng, SUBTOPIC_NOISE)


def around(points: np.ndarray, rng: np.random.Generator, noise_scale: float = NOISE) -> np.ndarray:
    """Unit vectors scattered around the given unit points."""
    noise = rng.standard_normal(points.shape).astype(np.float32) * (noise_scale / np.sqrt(DIM))
    v = points + noise
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def scope_assignment(spec: Spec, rng: np.random.Generator) -> list[tuple[str, str, str]]:
    """(kind, user_id, namespace) of every row, shuffled so scopes interleave on disk."""
    scopes: list[tuple[str, str, str]] = [("semantic", "", "kb")] * spec.namespace_rows
    for u in range(spec.large_users):
        scopes += [("episodic", f"large-{u}", "default")] * spec.large_user_rows
    for u in range(spec.small_users):
        scopes += [("episodic", f"user-{u}", "default")] * spec.small_user_rows
    order = rng.permutation(len(scopes))
    return [scopes[i] for i in order]


def loaded_spec(cursor) -> dict | None:  # type: ignore[no-untyped-def]
    cursor.execute("SELECT to_regclass('bench_meta') IS NOT NULL")
    if not cursor.fetchone()[0]:
        return None
    cursor.execute("SELECT spec FROM bench_meta LIMIT 1")
    row = cursor.fetchone()
    if not row:
        return None
    # Django loads jsonb as text (its JSONField decodes it), so decode here too.
    return json.loads(row[0]) if isinstance(row[0], str) else row[0]


def _spec_json(spec: Spec) -> dict:
    return json.loads(json.dumps(asdict(spec)))


def load(spec: Spec, tenant_id: int, *, log) -> None:  # type: ignore[no-untyped-def]
    """COPY the synthetic rows in, then build the indexes the load dropped."""
    from django.db import connection
    from pgvector.psycopg import register_vector

    connection.ensure_connection()
    raw = connection.connection
    register_vector(raw)
    rng = np.random.default_rng(spec.seed)
    cents = centres(spec.seed)
    scopes = scope_assignment(spec, rng)
    t0 = time.perf_counter()
    with raw.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS bench_meta")
        cur.execute("TRUNCATE memory_app_memory CASCADE")
        for name in LOAD_DROPPED_INDEXES:
            cur.execute(f"DROP INDEX IF EXISTS {name}")
        raw.commit()
        cur.execute("SET synchronous_commit = off")
        # Skips the per-row foreign-key trigger on tenant_id (the bench tenant exists).
        cur.execute("SET session_replication_role = replica")
        base = datetime(2025, 1, 1, tzinfo=UTC)
        columns = (
            "tenant_id, kind, user_id, agent_id, namespace, session_id, text, text_hash, embedding, "
            "embedding_model, topics, entities, event_type, event_date, context, category, fact_type, "
            "source, metadata, created_at, updated_at, pinned, status, access_count, helpful_count, "
            "harmful_count, confidence"
        )
        chunk = 50_000
        for start in range(0, spec.rows, chunk):
            n = min(chunk, spec.rows - start)
            which = rng.integers(0, CENTRES, n)
            vectors = around(cents[which], rng)
            topics = rng.integers(0, TOPICS, n)
            conf = rng.uniform(0.2, 1.0, n)
            with cur.copy(f"COPY memory_app_memory ({columns}) FROM STDIN") as copy:
                for j in range(n):
                    i = start + j
                    kind, user, namespace = scopes[i]
                    created = base + timedelta(minutes=i)
                    text = f"memory {i} about topic-{topics[j]} near centre {which[j]}"
                    copy.write_row(
                        (
                            tenant_id, kind, user, "", namespace, f"s-{user}-{i // 50}", text,
                            hashlib.sha256(text.encode()).hexdigest(), vectors[j], MODEL,
                            [f"topic-{topics[j]}"], [], "", created, "", "", "", "", "{}",
                            created, created, False, "active", 0, 0, 0, float(conf[j]),
                        )
                    )  # fmt: skip
            raw.commit()
            log(f"  copied {start + n:,} rows ({time.perf_counter() - t0:.0f} s)")
        copy_tokens(raw, tenant_id=tenant_id, log=log)
        cur.execute("SET session_replication_role = DEFAULT")
    ensure_indexes(log=log)
    # Django keeps the connection in autocommit, which VACUUM needs.
    with raw.cursor() as cur:
        cur.execute("VACUUM ANALYZE memory_app_memory")
    log(f"  loaded in {time.perf_counter() - t0:.0f} s")


def ensure_indexes(*, log) -> None:  # type: ignore[no-untyped-def]
    """Build every index the Memory model declares that the table lacks (after a load or a crash)."""
    from django.db import connection

    from memory_app.models import Memory

    with connection.cursor() as cur:
        cur.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memory_app_memory'")
        present = {row[0] for row in cur.fetchall()}
        cur.execute("SET maintenance_work_mem = '2GB'")  # the 1 M HNSW graph is ~2 GB
        cur.execute("SET max_parallel_maintenance_workers = 1")
    for index in Memory._meta.indexes:
        if index.name in present:
            continue
        t0 = time.perf_counter()
        with connection.schema_editor() as editor:
            editor.add_index(Memory, index)
        log(f"  built {index.name} in {time.perf_counter() - t0:.0f} s")
    with connection.cursor() as cur:
        cur.execute("RESET maintenance_work_mem")


def mark_loaded(spec: Spec) -> None:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS bench_meta (spec jsonb NOT NULL)")
        cur.execute("DELETE FROM bench_meta")
        cur.execute("INSERT INTO bench_meta (spec) VALUES (%s)", [json.dumps(_spec_json(spec))])


def is_loaded(spec: Spec) -> bool:
    from django.db import connection

    with connection.cursor() as cur:
        return loaded_spec(cur) == _spec_json(spec)
