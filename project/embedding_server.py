"""gunicorn's master starts and stops the model process its workers share (memory_app/embeddings/
shared.py): `manage.py embedding_server` on a Unix socket in a private temporary directory, whose
path the workers inherit as EMBEDDING_SHARED_SOCKET.

Off by default (EMBEDDING_SHARED_MODEL=true, local provider only): on the shared 2-core machine it
was measured, it made forward passes fuller (1.4-2.0 texts each against 1.3-1.5) but the CPU per
request did not move beyond the noise (docs/PERFORMANCE.md, "Load"). The master waits
for the socket (the model loads in a few seconds) before it forks the workers; a model process that
does not come up, or dies later, costs no request: each worker then embeds in process, as it does
without one. No Django here: the master has not loaded the project.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger("gunicorn.error")

SOCKET_ENV = "EMBEDDING_SHARED_SOCKET"
START_TIMEOUT_SECONDS = 120.0
_process: subprocess.Popen[bytes] | None = None


def enabled() -> bool:
    provider = os.environ.get("EMBEDDING_PROVIDER", "local").strip().lower()
    shared = os.environ.get("EMBEDDING_SHARED_MODEL", "false").strip().lower()
    return provider == "local" and shared in ("1", "true", "yes", "on")


def start() -> None:
    global _process
    os.environ.pop(SOCKET_ENV, None)
    if not enabled():
        return
    path = str(Path(tempfile.mkdtemp(prefix="memory-embedding-")) / "model.sock")
    manage = Path(__file__).resolve().parent.parent / "manage.py"
    env = {k: v for k, v in os.environ.items() if k != SOCKET_ENV}
    _process = subprocess.Popen([sys.executable, str(manage), "embedding_server", "--socket", path], env=env)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline and _process.poll() is None and not os.path.exists(path):
        time.sleep(0.1)
    if not os.path.exists(path):
        log.warning("embedding server did not start; each worker runs the local model itself")
        stop()
        return
    os.environ[SOCKET_ENV] = path  # inherited by the workers forked after this
    log.info("embedding server (pid %d) on %s", _process.pid, path)


def stop() -> None:
    global _process
    path = os.environ.pop(SOCKET_ENV, None)
    if _process is not None and _process.poll() is None:
        _process.send_signal(signal.SIGTERM)
        try:
            _process.wait(10)
        except subprocess.TimeoutExpired:
            _process.kill()
            _process.wait(5)
    _process = None
    if path:
        shutil.rmtree(Path(path).parent, ignore_errors=True)
