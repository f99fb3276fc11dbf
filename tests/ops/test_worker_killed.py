"""A Celery worker process killed with SIGKILL in the middle of a compaction job.

The worker runs as a separate process (`celery -A project worker`, solo pool) against Redis, on a
queue and key prefix of this test only. The test holds the scope lock of the second user, so the job
stops there after checkpointing the first; the worker is killed, a second worker starts, Redis
hands it the unacknowledged message (visibility timeout), and the job resumes from its cursor.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from celery import Celery
from django.db import connection

from memory_app.models import MaintenanceJob, Memory
from memory_app.models.jobs import JobKind, JobStatus
from memory_app.models.memory import MemoryStatus
from memory_app.services.maintenance.jobs import RUN_TASK, maintenance_job_create
from memory_app.services.rows.locks import scope_lock_key
from tests.factories import TenantFactory
from tests.factories.ops import put_updates
from tests.support.celery_live import REDIS_HOST, REDIS_PORT, redis_available, wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
BROKER = f"redis://{REDIS_HOST}:{REDIS_PORT}/0"
VISIBILITY_TIMEOUT = 21  # just above the hard time limit below, the smallest the settings accept


def _start_worker(queue: str, prefix: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.worker_settings",
        "WORKER_TEST_DATABASE": connection.settings_dict["NAME"],
        "WORKER_KEY_PREFIX": prefix,
        "CELERY_BROKER_URL": BROKER,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "MAINTENANCE_JOB_HEARTBEAT_SECONDS": "1",
        "MAINTENANCE_JOB_STALE_SECONDS": "3",
        "TASK_SOFT_TIME_LIMIT_SECONDS": "10",
        "TASK_TIME_LIMIT_SECONDS": "20",
        "CELERY_VISIBILITY_TIMEOUT_SECONDS": str(VISIBILITY_TIMEOUT),
    }
    command = [sys.executable, "-m", "celery", "-A", "project", "worker", "--pool=solo", "-Q", queue]
    command += ["--without-mingle", "--without-gossip", "--loglevel=warning"]
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def _stop(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)


def _hold_scope_lock(tenant_id: int, user_id: str) -> psycopg.Connection:
    """A transaction of our own holding the scope's advisory lock, as a concurrent store would."""
    params = connection.get_connection_params()
    held = psycopg.connect(**{k: v for k, v in params.items() if k != "cursor_factory"})
    key = scope_lock_key(tenant_id=tenant_id, user_id=user_id, namespace="default", kind="episodic")
    held.execute("SELECT pg_advisory_xact_lock(%s)", [key])
    return held


def _job(job_id: int) -> MaintenanceJob:
    return MaintenanceJob.objects.get(pk=job_id)


def test_a_job_whose_worker_was_killed_is_redelivered_and_resumes_from_its_cursor() -> None:
    if not redis_available():
        pytest.skip(f"Redis is not reachable at {REDIS_HOST}:{REDIS_PORT}")
    tenant = TenantFactory()
    for user_id in ("u1", "u2", "u3"):
        put_updates(tenant, user_id=user_id, facts=1)
    job = maintenance_job_create(kind=JobKind.COMPACTION, tenant=tenant, enqueue=False)
    queue, prefix = f"test-kill-{uuid.uuid4().hex[:10]}", f"test-kill-{uuid.uuid4().hex[:10]}:"
    log = Path(tempfile.mkdtemp()) / "workers.log"
    sender = Celery("sender", broker=BROKER, set_as_current=False)
    sender.conf.broker_transport_options = {"global_keyprefix": prefix}
    held = _hold_scope_lock(tenant.pk, "u2")
    first = second = None
    try:
        first = _start_worker(queue, prefix, log)
        sender.send_task(RUN_TASK, args=(job.pk,), queue=queue)
        wait_for(lambda: _job(job.pk).cursor.get("after", [None, None])[1] == "u1", what="u1 done")
        time.sleep(1.5)  # blocked on u2's lock, heartbeating
        assert _job(job.pk).status == JobStatus.RUNNING
        owner = _job(job.pk).claimed_by
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        held.rollback()  # the lock is free again

        second = _start_worker(queue, prefix, log)
        wait_for(
            lambda: _job(job.pk).status in (JobStatus.DONE, JobStatus.FAILED),
            timeout=VISIBILITY_TIMEOUT + 60,
            what=f"the redelivered job (worker log: {log.read_text()[-2000:]})",
        )
    finally:
        held.close()
        for worker in (first, second):
            if worker is not None:
                _stop(worker)
        sender.close()
    done = _job(job.pk)
    assert done.status == JobStatus.DONE, done.error
    assert done.claimed_by != owner and done.stats["takeovers"] == 1
    # u1 was finished before the kill and not compacted again: three scopes, six supersedes in all.
    assert (done.stats["scopes"], done.stats["superseded"]) == (3, 6)
    assert done.cursor["after"][1] == "u3"
    assert Memory.objects.filter(tenant=tenant, status=MemoryStatus.ACTIVE).count() == 3
