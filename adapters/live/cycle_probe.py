"""Where a live cycle's wall seconds go, phase by phase, for the cycle log.

On a shared machine a cycle's wall seconds are its own CPU plus the time it could not run: waiting
for a CPU (the API server and etcd take the cores while a batch of pods is created), or blocked
with a CPU free (another thread of the process holds the GIL: the informers decoding a burst of
watch events; a lock). The process's CPU seconds alone do not tell these apart. So each phase of a
cycle is marked with the cycle thread's own CPU and run-queue wait (Linux's
``/proc/thread-self/schedstat``: nanoseconds on a CPU, nanoseconds runnable but waiting for one),
the process's CPU (the other threads' is the difference), the cyclic collector's CPU
(:class:`~vcsat.adapters.live.gc_clock.GcClock`) and the store's generation (watch events applied
meanwhile). What is left of a phase's wall after its CPU and its wait is ``blocked``.

Reading the counters costs a few microseconds a mark, a handful of marks a cycle.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

_SCHEDSTAT = "/proc/thread-self/schedstat"


def thread_schedstat() -> tuple[float, float] | None:
    """The calling thread's seconds on a CPU and seconds waiting for one (None: not Linux, or the
    kernel keeps no schedstats)."""
    try:
        with open(_SCHEDSTAT, encoding="ascii") as stat:
            fields = stat.read().split()
        return int(fields[0]) / 1e9, int(fields[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class Mark:
    """The counters at one moment of a cycle, read on the cycle's thread."""

    wall: float
    thread_cpu: float
    process_cpu: float
    run_wait: float | None
    gc_cpu: float
    events: int

    @classmethod
    def now(cls, gc_cpu: float, events: int) -> Mark:
        sched = thread_schedstat()
        return cls(
            wall=time.monotonic(),
            thread_cpu=time.thread_time(),
            process_cpu=time.process_time(),
            run_wait=None if sched is None else sched[1],
            gc_cpu=gc_cpu,
            events=events,
        )


def span(start: Mark, end: Mark) -> dict[str, float | int | None]:
    """One phase's seconds, rounded to the millisecond: ``wall``, the cycle thread's ``cpu``, its
    ``run_wait`` for a CPU, ``blocked`` (the rest of the wall: the GIL held by another thread, a
    lock, I/O), the process's ``other_cpu`` (its other threads), ``gc`` (the collector's CPU,
    every thread) and ``events`` (the store's changes applied meanwhile)."""
    wall = end.wall - start.wall
    cpu = end.thread_cpu - start.thread_cpu
    wait = None if start.run_wait is None or end.run_wait is None else end.run_wait - start.run_wait
    blocked = None if wait is None else max(0.0, wall - cpu - wait)
    return {
        "wall": round(wall, 3),
        "cpu": round(cpu, 3),
        "run_wait": None if wait is None else round(wait, 3),
        "blocked": None if blocked is None else round(blocked, 3),
        "other_cpu": round(max(0.0, (end.process_cpu - start.process_cpu) - cpu), 3),
        "gc": round(end.gc_cpu - start.gc_cpu, 3),
        "events": end.events - start.events,
    }


@dataclass
class CycleProbe:
    """The marks of one cycle: ``mark(name)`` ends the phase ``name`` (begun at the last mark)."""

    gc_cpu: Callable[[], float]
    events: Callable[[], int]
    _marks: list[tuple[str, Mark]] = field(default_factory=list)

    def start(self) -> None:
        self._marks = [("", Mark.now(self.gc_cpu(), self.events()))]

    def mark(self, name: str) -> None:
        self._marks.append((name, Mark.now(self.gc_cpu(), self.events())))

    def phases(self) -> dict[str, dict[str, float | int | None]]:
        """Each phase's :func:`span`, in order, and ``cycle``: from the start to the last mark."""
        marks = self._marks
        out = {name: span(before, after) for (_, before), (name, after) in itertools.pairwise(marks)}
        if len(marks) > 1:
            out["cycle"] = span(marks[0][1], marks[-1][1])
        return out
