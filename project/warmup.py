"""Load what a server process reads on first use before it takes requests, so its first requests
do not pay for it: the local embedding model (~2-5 s) and its int8 copy for queries, the relation
judge's unit registry, calibration and word rules with the token counter (~0.5 s, measured on the
2-core machine: the first judged pair of a fresh process took 507 ms, the next 17 ms), and
dateparser's language data (~1 s, for the first query naming a date). Called where each server
loads its application, before it listens or takes a request: project/wsgi.py (gunicorn's workers,
runserver), project/asgi.py (bin/serve-mcp) and `manage.py mcp_server` (stdio, before it answers
`initialize`); EMBEDDING_WARMUP=false skips both. `gc_tune` then sets the process's garbage
collector for serving."""

from __future__ import annotations

import gc
import os


def embedding_warmup() -> None:
    if os.environ.get("EMBEDDING_WARMUP", "true").lower() in ("0", "false", "no", "off"):
        return
    from memory_app.conf import embeddings_config

    if embeddings_config().provider == "local":
        from memory_app.embeddings.local import local_embed

        local_embed(["warm-up"])
        local_embed(["warm-up"], query=True)  # a query's pass: the int8 copy, made here if missing
    judge_warmup()
    query_time_warmup()


def query_time_warmup() -> None:
    """One query with a date through dateparser, which loads its English data on first use: the
    first search naming a month in a fresh process took ~1 s, the next a few milliseconds."""
    from datetime import UTC, datetime

    from memory_app.extraction.query_time import query_window

    query_window("what did I do last march", datetime(2025, 6, 1, tzinfo=UTC))


def judge_warmup() -> None:
    """One pair through the judge's rules, read from the words alone (the token model never runs
    here, whatever the embedding provider), and one token count."""
    from memory_app.embeddings import configured_model_name
    from memory_app.embeddings.tokens import count_tokens
    from memory_app.judge.calibration.params import load_calibration
    from memory_app.judge.offline import judge_from_words
    from memory_app.judge.signals.quantities import units_load

    new = "Alice paid $1,800 for the trip to Paris on 3 May"
    old = "Alice paid eighteen hundred dollars for her Paris trip in May"
    # Amounts in two notations, a name and a date: each table the rules read is loaded.
    judge_from_words(
        new,
        old,
        0.2,
        # The configured model's file: warm-up reads no database (the live model is the registry's).
        load_calibration(configured_model_name()),
    )
    # The rules read their facts lazily, and the pair above may be decided before the amounts are
    # read: the unit registry is loaded here, whatever the rules' order.
    units_load()
    count_tokens("warm-up")


def gc_tune() -> None:
    """Freeze what start-up and warm-up allocated (Django, the model, the judge's tables: ~0.5 M
    objects that live as long as the process) so that no collection walks them again, and collect
    the youngest generation after SERVER_GC_THRESHOLD allocations instead of Python's 700. With
    Python's defaults a `/context/all` call paid ~3.5 ms of its ~23 ms of CPU in collections,
    mostly full ones walking those objects; after this ~0.9 ms (docs/PERFORMANCE.md). 0 keeps
    Python's defaults. Called once the process has warmed up, before it takes requests."""
    from django.conf import settings

    threshold = settings.SERVER_GC_THRESHOLD
    if threshold == 0:
        return
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(threshold, older, oldest)
