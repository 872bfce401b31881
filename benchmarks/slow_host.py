"""A cycle as on a host F times slower, its CPU time still equal to its wall: ``phases.py --slow-host F``.

Why: on this box some 1,000-node cycles run 40-60% slower than the same file's other runs, with
the same work and CPU equal to wall (benchmarks/RESULTS.md, sessions 35 and 36): the host, at
times, runs the same instructions slower. Such runs come when they come; this replays one at will.
Every clock the process reads in Python (``time.monotonic``, ``time.perf_counter``,
``time.process_time``) is made to read this process's CPU seconds times F from the moment it is
set: each step then looks F times dearer to the cycle's wall plan (:mod:`vcsat.solver.deadline`)
and to the timing, with no wait for a CPU (the machine's other load is left out, as
``--cpu-clock`` leaves it out). What it cannot slow: CP-SAT's own wall limits, counted in C++.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def slowed(cpu: Callable[[], float], factor: float) -> Callable[[], float]:
    """A clock that reads ``cpu``'s seconds since now times ``factor`` (from ``cpu``'s reading now)."""
    if factor < 1:
        raise ValueError(f"a slower host has a factor of at least 1, not {factor}")
    origin = cpu()

    def clock() -> float:
        return origin + (cpu() - origin) * factor

    return clock


def slow_the_clocks(factor: float) -> None:
    """Set this process's Python clocks to :func:`slowed` CPU time (before the solver is imported:
    its clocks and their defaults are read from ``time`` then)."""
    clock = slowed(time.process_time, factor)
    time.monotonic = time.perf_counter = time.process_time = clock
