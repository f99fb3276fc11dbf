"""CPU seconds of processes read from Linux's /proc: what a benchmark charges to the server, the
database and itself (bench/load.py, bench/peer.py)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

# (pid, parent, process group, own CPU seconds, CPU seconds of its reaped children)
ProcStat = tuple[int, int, int, float, float]


def proc_stats() -> list[ProcStat]:
    """(pid, parent, process group, own CPU seconds, CPU seconds of its reaped children) of every
    process we can read."""
    tick = os.sysconf("SC_CLK_TCK")
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after "pid (comm)": state ppid pgrp ... utime(12) stime(13) cutime(14) cstime(15)
        own = (int(fields[11]) + int(fields[12])) / tick
        reaped = (int(fields[13]) + int(fields[14])) / tick
        out.append((int(entry.name), int(fields[1]), int(fields[2]), own, reaped))
    return out


def postmaster_pids(directories: Iterable[Path]) -> list[int]:
    """The postmasters of the PostgreSQL data directories that have one running."""
    pids = []
    for directory in directories:
        try:
            pids.append(int((directory / "postmaster.pid").read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            continue
    return pids


def embedded_postmasters() -> list[int]:
    """The embedded server's postmaster (none with DATABASE_URL: a server that may be elsewhere)."""
    from django.conf import settings

    if settings.DATABASE_URL:
        return []
    return postmaster_pids([Path(settings.EMBEDDED_PG_DIR)])


def database_cpu(postmasters: list[int], stats: list[ProcStat] | None = None) -> float:
    """CPU seconds used so far by the servers of `postmasters`: each postmaster, its live children
    (the backends), and the children it has reaped (a backend closed meanwhile takes its CPU with it
    otherwise)."""
    stats = proc_stats() if stats is None else stats
    return sum(
        cpu for pid, ppid, _group, cpu, _reaped in stats if pid in postmasters or ppid in postmasters
    ) + sum(reaped for pid, _ppid, _group, _cpu, reaped in stats if pid in postmasters)


def host_ticks() -> tuple[int, int]:
    """(ticks stolen by the hypervisor, all ticks) of every CPU so far, from /proc/stat's cpu line."""
    with open("/proc/stat") as stat:
        # cpu user nice system idle iowait irq softirq steal (guest time is inside user already)
        fields = [int(v) for v in stat.readline().split()[1:9]]
    return fields[7], sum(fields)


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the machine's CPU time the hypervisor gave to other guests between two readings
    of `host_ticks`: a VM's busy host shows here, and slows both systems of a comparison unevenly."""
    total = after[1] - before[1]
    return round((after[0] - before[0]) / total, 4) if total > 0 else 0.0
