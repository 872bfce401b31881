"""Who else ran while a live cycle ran: each thread of the process, and the rest of the machine.

The cycle probe (:mod:`~vcsat.adapters.live.cycle_probe`) splits a cycle's wall into the cycle
thread's CPU, its wait for a CPU and the rest (``blocked``). Two questions stay open from it: which
of the process's other threads ran during the cycle (the informers decoding watch events, the
applier's binding calls, the status writers: Python that holds the GIL the cycle then waits for),
and how much of the machine's CPUs other processes took (the API server, etcd, anything else on
the box: what the cycle's wait for a CPU is spent behind). So at the cycle's start and end this
reads every thread's counters (Linux's ``/proc/self/task/*/schedstat``: nanoseconds on a CPU,
nanoseconds waiting for one), names them by the Python thread that owns them (a pool's workers
summed under the pool's name), and reads the machine's busy CPU time (``/proc/stat``).

About thirty small files a read, two reads a cycle: a millisecond, so the scheduler takes them only
when its debug log (where the cycle line goes) is on. Off Linux every count is None.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass

_TASKS = "/proc/self/task"
_STAT = "/proc/stat"
_POOL_WORKER = re.compile(r"_\d+$")
"""``ThreadPoolExecutor`` names its workers ``prefix_N``: summed under ``prefix``."""


def task_times(tasks: str = _TASKS) -> dict[int, tuple[float, float]]:
    """Thread id -> (seconds on a CPU, seconds waiting for one), every thread of the process now
    (a thread that ends while being read is left out)."""
    out: dict[int, tuple[float, float]] = {}
    try:
        names = os.listdir(tasks)
    except OSError:
        return out
    for name in names:
        try:
            with open(f"{tasks}/{name}/schedstat", encoding="ascii") as stat:
                fields = stat.read().split()
            out[int(name)] = (int(fields[0]) / 1e9, int(fields[1]) / 1e9)
        except (OSError, ValueError, IndexError):
            continue
    return out


def box_busy(stat: str = _STAT) -> float | None:
    """Seconds the machine's CPUs have been busy (every CPU, every process) since boot: the first
    line of ``/proc/stat`` less idle and iowait; None where there is none."""
    try:
        with open(stat, encoding="ascii") as lines:
            fields = lines.readline().split()
        ticks = [int(field) for field in fields[1:]]
    except (OSError, ValueError):
        return None
    if fields[:1] != ["cpu"] or len(ticks) < 5:
        return None
    # user nice system idle iowait irq softirq steal (guest and guest_nice are already in user/nice)
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def thread_name(name: str) -> str:
    """A Python thread's name as the split reports it: a pool's workers under their pool's name."""
    return _POOL_WORKER.sub("", name)


@dataclass(frozen=True)
class Reading:
    """The counters at one moment: every thread's, the process's and the machine's."""

    wall: float
    tasks: dict[int, tuple[float, float]]
    process_cpu: float
    box_busy: float | None

    @classmethod
    def now(cls) -> Reading:
        return cls(time.monotonic(), task_times(), time.process_time(), box_busy())


def split(start: Reading, end: Reading, names: dict[int, str], cycle_thread: int, cpus: int) -> dict[str, object]:
    """What ran from ``start`` to ``end``, rounded to the millisecond: ``threads`` (CPU seconds of
    each named thread but the cycle's, the busiest first, those that ran), ``process_cpu`` (every
    thread, the cycle's included), ``others_cpu`` (the machine's busy seconds less the process's:
    other processes), ``capacity`` (the wall times the CPUs), ``load`` (the one-minute load
    average at the end) and ``threads_total`` (each name's CPU seconds since it started, the cycle's
    thread as ``cycle``: two cycles' totals tell what each thread used between them). ``names``:
    thread id -> Python thread name (unknown ids count as ``other``)."""
    wall = end.wall - start.wall
    threads: dict[str, float] = {}
    total: dict[str, float] = {}
    for tid, (cpu, _) in end.tasks.items():
        name = "cycle" if tid == cycle_thread else thread_name(names.get(tid, "other"))
        total[name] = total.get(name, 0.0) + cpu
        if tid == cycle_thread:
            continue
        used = cpu - start.tasks.get(tid, (0.0, 0.0))[0]
        if used > 0:
            threads[name] = threads.get(name, 0.0) + used
    process = end.process_cpu - start.process_cpu
    others = None
    if start.box_busy is not None and end.box_busy is not None:
        # Ticks of 10 ms against nanoseconds: never below zero.
        others = round(max(0.0, end.box_busy - start.box_busy - process), 3)
    try:
        load: float | None = round(os.getloadavg()[0], 2)
    except OSError:
        load = None
    return {
        "threads": {
            name: round(used, 3) for name, used in sorted(threads.items(), key=lambda item: -item[1]) if used >= 0.0005
        },
        "process_cpu": round(process, 3),
        "others_cpu": others,
        "capacity": round(wall * cpus, 3),
        "load": load,
        "threads_total": {name: round(cpu, 3) for name, cpu in sorted(total.items())},
    }


class CycleThreads:
    """The split of one cycle: ``start()`` on the cycle's thread, then ``end()`` on it."""

    def __init__(self) -> None:
        self._start: Reading | None = None
        self._thread = 0

    def start(self) -> None:
        self._thread = threading.get_native_id()
        self._start = Reading.now()

    def end(self) -> dict[str, object] | None:
        """The :func:`split` since ``start()`` (None when not started)."""
        if self._start is None:
            return None
        reading = Reading.now()
        names = {thread.native_id: thread.name for thread in threading.enumerate() if thread.native_id is not None}
        return split(self._start, reading, names, self._thread, os.cpu_count() or 1)
