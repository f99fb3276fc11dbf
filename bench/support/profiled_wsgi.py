"""The WSGI application with every thread's CPU sampled, for `bench/load.py --profile DIR`.

    gunicorn -c project/gunicorn.conf.py --pythonpath bench support.profiled_wsgi:application

Each worker process starts a `cpu_sampler.Sampler` at its first request (after the fork: a thread
is never inherited) and at exit writes the CPU it saw, by Python stack, to
`$LOAD_PROFILE_DIR/worker-<pid>-<requests served>.collapsed`. The sampler sees every thread: the
request threads, the embedding micro-batcher's thread that runs the forward passes of several
requests, and gunicorn's own.
"""

from __future__ import annotations

import atexit
import os
import threading
from pathlib import Path
from typing import Any

from project.wsgi import application as _application

from .cpu_sampler import Sampler

_state: dict[str, Any] = {"sampler": None, "requests": 0}
_lock = threading.Lock()


def application(environ: dict[str, Any], start_response: Any) -> Any:
    with _lock:
        if _state["sampler"] is None:
            _state["sampler"] = Sampler()
            if os.environ.get("LOAD_PROFILE_SAMPLER", "on") != "off":  # off: batch counts only
                _state["sampler"].start()
        _state["requests"] += 1
    return _application(environ, start_response)


@atexit.register
def _dump() -> None:
    directory = os.environ.get("LOAD_PROFILE_DIR")
    if directory and _state["sampler"] is not None:
        path = Path(directory) / f"worker-{os.getpid()}-{_state['requests']}.collapsed"
        _state["sampler"].dump(path)
        from memory_app.embeddings import local

        # How well concurrent requests shared forward passes: this worker's micro-batcher.
        if local._batcher is not None:
            batcher = local._batcher
            path.with_suffix(".batches").write_text(f"{batcher.batches} {batcher.texts}\n")
