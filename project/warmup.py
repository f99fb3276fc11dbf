"""Load what a server process reads on first use before it takes requests, so its first requests
do not pay for it: the local embedding model (~2-5 s), and the relation judge's unit registry,
calibration and word rules with the token counter (~0.5 s, measured on the 2-core machine: the
first judged pair of a fresh process took 507 ms, the next 17 ms). Called by gunicorn's
`post_worker_init` and by project/asgi.py; EMBEDDING_WARMUP=false skips both."""

from __future__ import annotations

import os


def embedding_warmup() -> None:
    if os.environ.get("EMBEDDING_WARMUP", "true").lower() in ("0", "false", "no", "off"):
        return
    from django.conf import settings

    if settings.EMBEDDING_PROVIDER == "local":
        from memory_app.embeddings.local import local_embed

        local_embed(["warm-up"])
    judge_warmup()


def judge_warmup() -> None:
    """One pair through the judge's rules, read from the words alone (the token model never runs
    here, whatever the embedding provider), and one token count."""
    from memory_app.embeddings.tokens import count_tokens
    from memory_app.judge.calibration.params import load_calibration
    from memory_app.judge.offline import spelled_judgement

    # Amounts in two notations, a name and a date: each table the rules read is loaded.
    spelled_judgement(
        "Alice paid $1,800 for the trip to Paris on 3 May",
        "Alice paid eighteen hundred dollars for her Paris trip in May",
        0.2,
        load_calibration(),
    )
    count_tokens("warm-up")
