"""What the process and the machine did while one cycle ran: the counters that tell a slow run's cause.

Why: on this box a 1,000-node cycle sometimes runs 40-60% slower than the same file's other runs,
its CPU time equal to its wall (benchmarks/RESULTS.md, sessions 35 and 36). CPU seconds alone
cannot say whether the process did more (another hash order, the cyclic collector, more memory
touched) or the machine ran the same work slower (another tenant on the host's core; guest memory
the host must back again on its first touch, which the guest counts as the process's CPU time).
Taken before and after the cycle, these say which:

- ``utime`` / ``stime``: user and kernel CPU seconds. A first touch of new memory is kernel time
  (the guest's page-fault handler zeroes the page; where the host must back the page first, the
  guest counts that wait here too).
- ``minflt`` / ``majflt``: page faults (minor: new or reclaimed memory; major: read from disk).
- ``nvcsw`` / ``nivcsw``: context switches (involuntary: the process was preempted, another
  runnable process wanted the CPU).
- ``gc``: the cyclic collector's passes and seconds by generation while the cycle ran (the solver
  pauses the collector: none expected).
- ``steal``: the ticks ``/proc/stat`` counts as taken by the hypervisor, over all CPUs.

And paces measured in the same process, just before the cycle and again just after it
(``_after``):

- ``python_ms``: CPU milliseconds of a fixed pure-Python loop over a small table (in the core's
  own caches: the host's pace at interpreting);
- ``fault_us``: CPU microseconds per page to first-touch fresh anonymous memory (the host's pace
  at giving the process memory; the cycle at 1,000 nodes takes about 18,000 such faults);
- ``heap_ms`` (after the cycle only): CPU milliseconds to walk the snapshot's objects (pods, nodes,
  PodGroups) a fixed number of times, reading each one's attribute dict: the cycle's own objects,
  spread over megabytes, so the pace of the caches and memory the cycle reads through. Comparable
  between runs of one file only.

A slow run with the same ``minflt`` and no collector pass is the host's; ``python_ms`` slower too
points at the core, ``heap_ms`` alone at the caches and memory, ``fault_us`` and ``stime`` at new
memory; more faults or passes at the process. Used by ``phases.py --counters``.
"""

from __future__ import annotations

import gc
import mmap
import resource
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

from vcsat.solver.pauses import no_gc_pauses

PAGE = mmap.PAGESIZE
_WORK = tuple(range(1000))
_TABLE = {i: i for i in _WORK}


@dataclass(frozen=True)
class Sample:
    """The process's counters at one moment (``getrusage``) and the machine's steal ticks."""

    utime: float
    stime: float
    minflt: int
    majflt: int
    nvcsw: int
    nivcsw: int
    steal: int | None
    """``/proc/stat``'s steal ticks summed over the CPUs (None where there is no /proc/stat)."""


def _steal() -> int | None:
    try:
        with open("/proc/stat") as stat:
            columns = stat.readline().split()
    except OSError:
        return None
    return int(columns[8]) if len(columns) > 8 and columns[0] == "cpu" else None


def take() -> Sample:
    """The counters now."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return Sample(
        utime=usage.ru_utime,
        stime=usage.ru_stime,
        minflt=usage.ru_minflt,
        majflt=usage.ru_majflt,
        nvcsw=usage.ru_nvcsw,
        nivcsw=usage.ru_nivcsw,
        steal=_steal(),
    )


def difference(before: Sample, after: Sample) -> dict[str, Any]:
    """What each counter counted from ``before`` to ``after`` (seconds rounded to the millisecond;
    steal None where either sample lacks it)."""
    out: dict[str, Any] = {}
    for field in fields(Sample):
        first, last = getattr(before, field.name), getattr(after, field.name)
        if first is None or last is None:
            out[field.name] = None
        elif isinstance(first, float):
            out[field.name] = round(last - first, 3)
        else:
            out[field.name] = last - first
    return out


@contextmanager
def collector_passes() -> Iterator[dict[int, list[float]]]:
    """The cyclic collector's passes while the block runs: per generation, [passes, seconds]."""
    passes: dict[int, list[float]] = {generation: [0, 0.0] for generation in range(3)}
    started = [0.0]

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        tally = passes[info["generation"]]
        tally[0] += 1
        tally[1] += time.perf_counter() - started[0]

    gc.callbacks.append(watch)
    try:
        yield passes
    finally:
        gc.callbacks.remove(watch)
        for tally in passes.values():
            tally[1] = round(tally[1], 4)


def python_pace(rounds: int = 200) -> float:
    """CPU milliseconds of a fixed loop of dict reads and integer arithmetic over objects made at
    import: no new memory is touched and the collector is not run, so only the host's pace moves it."""
    with no_gc_pauses():
        started = time.process_time()
        total = 0
        for _ in range(rounds):
            for i in _WORK:
                total += _TABLE[i] & 7
        spent = time.process_time() - started
    return round(spent * 1000, 2)


def fault_pace(mib: int = 16) -> float:
    """CPU microseconds per page to write one byte to each page of ``mib`` MiB of fresh anonymous
    memory (each write is a page fault: the kernel finds, zeroes and maps a page)."""
    size = mib << 20
    region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        started = time.process_time()
        for offset in range(0, size, PAGE):
            region[offset] = 1
        spent = time.process_time() - started
    finally:
        region.close()
    return round(spent / (size // PAGE) * 1e6, 3)


def heap_pace(objects: Sequence[object], rounds: int = 10) -> float:
    """CPU milliseconds to read the attribute dict of each of ``objects``, ``rounds`` times over
    (the collector paused): a walk over memory the process already holds, at its caches' pace."""
    with no_gc_pauses():
        started = time.process_time()
        total = 0
        for _ in range(rounds):
            for obj in objects:
                total += len(obj.__dict__)
        spent = time.process_time() - started
    return round(spent * 1000, 2)
