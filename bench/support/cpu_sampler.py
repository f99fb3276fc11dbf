"""A sampling CPU profiler for every thread of a process, weighted by each thread's own CPU time.

Why not cProfile: it times every call, which made the served requests ~5 times slower in Python
and overstated Python-heavy code against torch and PostgreSQL; timed by `thread_time` it also
misattributes waits on a condition variable (even negative times). Here a daemon thread wakes every
`interval` seconds, reads each thread's CPU clock (`pthread_getcpuclockid`) and charges the CPU used
since the last look to that thread's current Python stack. A thread blocked on a socket, a lock or
the GIL uses no CPU and so is charged nothing; torch's forward pass, run with one intra-op thread
in the calling thread, is charged to the Python frame that called it.

The stacks come from `faulthandler.dump_traceback(all_threads=True)`, which walks them in C while
holding the GIL. Walking `sys._current_frames()` in Python does not: the sampler can lose the GIL
mid-walk, the other thread runs on, and a frame's `f_back` then points at a reused slot (seen on
3.11: garbage attributes, then SIGSEGV in the served workers). faulthandler keeps at most 100
frames per thread, innermost first, so the outermost frames of a deeper stack are missing.
The sampler needs the GIL to look, so CPU a thread spent just before it released the GIL (at a
query, at a lock) lands a little more often on that point than on the code before it.

`Sampler.dump(path)` writes one line per distinct stack, "frame;frame;...;frame microseconds"
(the collapsed format flame-graph tools read); `summary(stacks)` ranks functions by inclusive
and own CPU.
"""

from __future__ import annotations

import faulthandler
import re
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

_THREAD = re.compile(r"^(?:Current thread|Thread) (0x[0-9a-f]+)")
_FRAME = re.compile(r'^  File "(.*)", line \d+ in (.*)$')


def parse_traceback(text: str) -> dict[int, tuple[str, ...]]:
    """faulthandler's dump: thread ident -> stack, outermost frame first."""
    stacks: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        thread = _THREAD.match(line)
        if thread:
            current = stacks.setdefault(int(thread.group(1), 16), [])
            continue
        frame = _FRAME.match(line)
        if frame and current is not None:
            filename = frame.group(1).split("site-packages/")[-1]
            current.append(f"{frame.group(2)} ({filename})")
    return {ident: tuple(reversed(names)) for ident, names in stacks.items()}


class Sampler:
    def __init__(self, interval: float = 0.004) -> None:
        self.interval = interval
        self.cpu_by_stack: Counter[tuple[str, ...]] = Counter()
        self._clocks: dict[int, list[float]] = {}  # thread ident -> [clock id, CPU seconds seen]
        self._lock = threading.Lock()  # dump() runs while the sampler may still be looking
        self._buffer = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - lives as long as the sampler

    def start(self) -> None:
        threading.Thread(target=self._run, name="cpu-sampler", daemon=True).start()

    def _run(self) -> None:
        me = threading.get_ident()
        while True:
            time.sleep(self.interval)
            with self._lock:
                self.sample(skip=me)

    def sample(self, *, skip: int) -> None:
        self._buffer.seek(0)
        self._buffer.truncate()
        faulthandler.dump_traceback(self._buffer, all_threads=True)
        self._buffer.seek(0)
        stacks = parse_traceback(self._buffer.read())
        for ident, stack in stacks.items():
            if ident == skip:
                continue
            clock = self._clocks.get(ident)
            try:
                if clock is None:
                    clock_id = time.pthread_getcpuclockid(ident)
                    self._clocks[ident] = [clock_id, time.clock_gettime(clock_id)]
                    continue
                now = time.clock_gettime(int(clock[0]))
            except OSError:  # the thread ended
                self._clocks.pop(ident, None)
                continue
            used, clock[1] = now - clock[1], now
            if used > 0 and stack:
                self.cpu_by_stack[stack] += used
        for ident in set(self._clocks) - set(stacks):
            del self._clocks[ident]

    def dump(self, path: Path) -> None:
        with self._lock:
            lines = [f"{';'.join(stack)} {round(cpu * 1e6)}" for stack, cpu in self.cpu_by_stack.items()]
        path.write_text("\n".join(lines) + "\n")


def read_collapsed(paths: Iterable[Path]) -> Counter[tuple[str, ...]]:
    stacks: Counter[tuple[str, ...]] = Counter()
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip():
                stack, micros = line.rsplit(" ", 1)
                stacks[tuple(stack.split(";"))] += int(micros) / 1e6
    return stacks


def summary(stacks: Counter[tuple[str, ...]]) -> tuple[float, Counter[str], Counter[str]]:
    """Total CPU seconds, and CPU seconds by function: inclusive (each function once per stack)
    and own (the innermost frame)."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    for stack, cpu in stacks.items():
        for name in set(stack):
            inclusive[name] += cpu
        own[stack[-1]] += cpu
    return sum(stacks.values()), inclusive, own
