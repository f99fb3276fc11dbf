"""Settings of a Celery worker that a test starts as a separate process (tests/ops/test_worker_killed.py).

The test settings, pointed at the test run's database (WORKER_TEST_DATABASE) and at Redis under a
key prefix of that test only, so its queues and unacknowledged messages are invisible to the suites
of other checkouts sharing the Redis server. Broker URL, queue and the job timings come from the
environment, as in production.
"""

import os

from project.settings_test import *  # noqa: F403
from project.settings_test import CELERY_BROKER_TRANSPORT_OPTIONS, DATABASES

DATABASES["default"]["NAME"] = os.environ["WORKER_TEST_DATABASE"]
CELERY_BROKER_TRANSPORT_OPTIONS = {
    **CELERY_BROKER_TRANSPORT_OPTIONS,
    "global_keyprefix": os.environ["WORKER_KEY_PREFIX"],
    # Look for messages of dead workers every second instead of every 100 s.
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
