"""Read replicas: which database a read runs on.

With `DATABASE_REPLICA_URLS` set, the read-only API paths (search, context, lists, stats, the review
queue) run their queries on a healthy streaming replica; everything else uses the primary
(`default`). The rules:

- A read block (`run_read`) picks a replica only when the caller did not ask for
  `consistency=strong` and the request has not written yet (read-your-writes, tracked by
  `ReadYourWritesMiddleware`). Writes always go to the primary: `ReplicaRouter.db_for_write`, and
  raw SQL in services uses `django.db.connection`, the primary.
- A replica is usable when it is in recovery and its replay is within
  `DATABASE_REPLICA_MAX_LAG_SECONDS` of the primary. Its state is measured at most every
  `DATABASE_REPLICA_CHECK_SECONDS` per process; a change of state is logged, and readiness shows it.
- A replica that fails during a read (stopped, network) is marked down and the read is run again on
  the primary, so the request does not fail.

Inside a read block, raw reads go through `memory_app.db`'s read helpers (which run on
`read_alias()`), transactions are opened with `transaction.atomic(using=read_alias())`, and ORM
reads follow the router. With no replica configured
every function here answers `default` and nothing changes.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.utils import InterfaceError, OperationalError

logger = logging.getLogger(__name__)

T = TypeVar("T")
Consistency = Literal["eventual", "strong"]
CONSISTENCY_CHOICES = ("eventual", "strong")

# The alias the current read block runs on (None outside a read block: the primary).
_read_alias: contextvars.ContextVar[str | None] = contextvars.ContextVar("db_read_alias", default=None)
# Per request: [wrote?]. None outside a request (commands, workers, MCP tools): no tracking there,
# since each of those either writes or reads and never mixes them through the router.
_request_wrote: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "db_request_wrote", default=None
)
_round_robin = itertools.count()


def replica_aliases() -> list[str]:
    return list(getattr(settings, "DATABASE_REPLICA_ALIASES", []))


def read_alias() -> str:
    return _read_alias.get() or DEFAULT_DB_ALIAS


# --- replica state -----------------------------------------------------------------------------
@dataclass
class ReplicaState:
    alias: str
    state: str = "unknown"  # ok | lagging | down | not_standby | unknown
    lag_seconds: float | None = None
    error: str = ""
    checked_at: float = 0.0

    @property
    def usable(self) -> bool:
        return self.state == "ok"

    def as_dict(self) -> dict[str, Any]:
        return {
            "alias": self.alias,
            "status": self.state,
            "lag_seconds": None if self.lag_seconds is None else round(self.lag_seconds, 3),
            "max_lag_seconds": settings.DATABASE_REPLICA_MAX_LAG_SECONDS,
            **({"error": self.error} if self.error else {}),
        }


_states: dict[str, ReplicaState] = {}
_states_lock = threading.Lock()

# The replica's lag: 0 when it has replayed everything the primary had written when we asked,
# else the age of the last transaction it replayed (an idle but caught-up replica is not "late").
LAG_SQL = (
    "SELECT pg_is_in_recovery(), coalesce(pg_last_wal_replay_lsn() >= %s::pg_lsn, false), "
    "EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp())"
)


def _measure(alias: str) -> ReplicaState:
    state = ReplicaState(alias=alias, checked_at=time.monotonic())
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_lsn()::text")
            primary_lsn = cursor.fetchone()[0]
        with connections[alias].cursor() as cursor:
            cursor.execute(LAG_SQL, [primary_lsn])
            in_recovery, caught_up, age = cursor.fetchone()
    except (OperationalError, InterfaceError) as exc:
        connections[alias].close()
        state.state, state.error = "down", f"{type(exc).__name__}: {exc}".strip()
        return state
    if not in_recovery:
        # A promoted or misconfigured server may have diverged from the primary.
        state.state = "not_standby"
        return state
    state.lag_seconds = 0.0 if caught_up else (float(age) if age is not None else None)
    limit = settings.DATABASE_REPLICA_MAX_LAG_SECONDS
    state.state = "ok" if state.lag_seconds is not None and state.lag_seconds <= limit else "lagging"
    return state


def _record(state: ReplicaState) -> ReplicaState:
    with _states_lock:
        previous = _states.get(state.alias)
        _states[state.alias] = state
    if previous is None or previous.state != state.state:
        level = logging.INFO if state.usable else logging.WARNING
        logger.log(
            level,
            "replica %s is %s (lag %s s, limit %s s)%s; reads %s",
            state.alias,
            state.state,
            "?" if state.lag_seconds is None else f"{state.lag_seconds:.3f}",
            settings.DATABASE_REPLICA_MAX_LAG_SECONDS,
            f": {state.error}" if state.error else "",
            "may use it" if state.usable else "go to the primary",
        )
    return state


def replica_state(alias: str, *, refresh: bool = False) -> ReplicaState:
    """The replica's state, measured again when older than DATABASE_REPLICA_CHECK_SECONDS."""
    with _states_lock:
        known = _states.get(alias)
    fresh = (
        known is not None and time.monotonic() - known.checked_at < settings.DATABASE_REPLICA_CHECK_SECONDS
    )
    if known is not None and fresh and not refresh:
        return known
    return _record(_measure(alias))


def mark_down(alias: str, exc: BaseException) -> None:
    connections[alias].close()
    _record(ReplicaState(alias, "down", None, f"{type(exc).__name__}: {exc}".strip(), time.monotonic()))


def replicas_report() -> list[dict[str, Any]]:
    """Every configured replica, measured now (readiness)."""
    return [replica_state(alias, refresh=True).as_dict() for alias in replica_aliases()]


def reset_states() -> None:
    with _states_lock:
        _states.clear()


# --- choosing ------------------------------------------------------------------------------------
def choose_read_alias(*, consistency: Consistency = "eventual") -> str:
    aliases = replica_aliases()
    if not aliases:
        return DEFAULT_DB_ALIAS
    wrote = _request_wrote.get()
    if consistency == "strong" or (wrote is not None and wrote[0]):
        logger.debug(
            "read on the primary: %s", "consistency=strong" if consistency == "strong" else "after a write"
        )
        return DEFAULT_DB_ALIAS
    start = next(_round_robin)
    for offset in range(len(aliases)):
        alias = aliases[(start + offset) % len(aliases)]
        if replica_state(alias).usable:
            logger.debug("read on replica %s", alias)
            return alias
    logger.debug("read on the primary: no usable replica")
    return DEFAULT_DB_ALIAS


@contextmanager
def _reading_on(alias: str) -> Iterator[None]:
    token = _read_alias.set(alias)
    try:
        yield
    finally:
        _read_alias.reset(token)


def replica_failure(exc: BaseException) -> bool:
    """Is `exc` a database failure inside a replica read block? (The standby went away, or cancelled
    the query for a conflict with recovery: either way the primary can answer.)"""
    return _read_alias.get() is not None and isinstance(exc, OperationalError | InterfaceError)


def run_read(fn: Callable[[], T], *, consistency: Consistency = "eventual") -> T:
    """Run a read-only block on a replica when one may serve it; when a database error interrupts it
    there, again on the primary (the block only reads, so running it twice is safe). A replica whose
    connection is gone is marked down until it is measured usable again."""
    alias = choose_read_alias(consistency=consistency)
    if alias == DEFAULT_DB_ALIAS:
        return fn()
    with _reading_on(alias):
        try:
            return fn()
        except (OperationalError, InterfaceError) as exc:
            failure = exc
    connection = connections[alias]
    if connection.connection is None or not connection.is_usable():
        mark_down(alias, failure)
    logger.warning("read on replica %s failed (%s); answered by the primary", alias, failure)
    return fn()


# --- the Django router and the request tracker --------------------------------------------------
class ReplicaRouter:
    """ORM reads inside a read block go to its replica; everything else to the primary."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return _read_alias.get()

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS


# A data-changing statement and its table. FOR UPDATE / ON CONFLICT DO UPDATE SET are no writes of
# their own (the table name slot then holds a keyword).
_WRITE = re.compile(r'\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|COPY)\s+"?(\w+)"?', re.IGNORECASE)
_NOT_TABLES = {"set", "skip", "nowait", "of"}
# Bookkeeping a request writes without reading it back: the key's last use (authentication).
_UNTRACKED_TABLES = {"memory_app_apikey", "django_session"}


def statement_writes(sql: str) -> bool:
    tables = {m.group(1).lower() for m in _WRITE.finditer(sql)} - _NOT_TABLES
    return bool(tables - _UNTRACKED_TABLES)


class ReadYourWritesMiddleware:
    """Marks a request that wrote to the primary, so its later reads go to the primary too.

    Writes a read block makes on the side (access counters, the embedding cache) do not count:
    the read never reads them back.
    """

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        if not replica_aliases():
            return self.get_response(request)
        wrote = [False]
        token = _request_wrote.set(wrote)

        def track(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
            if not wrote[0] and _read_alias.get() is None and statement_writes(sql):
                wrote[0] = True
            return execute(sql, params, many, context)

        try:
            with connections[DEFAULT_DB_ALIAS].execute_wrapper(track):
                return self.get_response(request)
        finally:
            _request_wrote.reset(token)
