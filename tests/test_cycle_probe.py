"""Where a live cycle's wall goes (``cycle_probe``): a phase's wall split into the cycle thread's CPU,
its wait for a CPU and the rest (blocked), as a table; and the phases of a probe in order, summing to
the cycle's."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vcsat.adapters.live.cycle_probe import CycleProbe, Mark, span, thread_schedstat


def _mark(wall: float, cpu: float, wait: float | None, process: float | None = None, gc: float = 0.0, events: int = 0):
    return Mark(
        wall=wall,
        thread_cpu=cpu,
        process_cpu=cpu if process is None else process,
        run_wait=wait,
        gc_cpu=gc,
        events=events,
    )


@pytest.mark.parametrize(
    ("end", "expected"),
    [
        pytest.param(
            _mark(1.0, 1.0, 0.0),
            {"wall": 1.0, "cpu": 1.0, "run_wait": 0.0, "blocked": 0.0, "other_cpu": 0.0, "gc": 0.0, "events": 0},
            id="all-on-cpu",
        ),
        pytest.param(
            _mark(1.0, 0.4, 0.5),
            {"wall": 1.0, "cpu": 0.4, "run_wait": 0.5, "blocked": 0.1, "other_cpu": 0.0, "gc": 0.0, "events": 0},
            id="waited-for-a-cpu",
        ),
        pytest.param(
            _mark(1.0, 0.4, 0.0, process=0.9, events=300),
            {"wall": 1.0, "cpu": 0.4, "run_wait": 0.0, "blocked": 0.6, "other_cpu": 0.5, "gc": 0.0, "events": 300},
            id="another-thread-ran",
        ),
        pytest.param(
            _mark(0.5, 0.3, None, gc=0.25),
            {"wall": 0.5, "cpu": 0.3, "run_wait": None, "blocked": None, "other_cpu": 0.0, "gc": 0.25, "events": 0},
            id="no-schedstat",
        ),
        pytest.param(
            _mark(0.5, 0.3, 0.3),
            {"wall": 0.5, "cpu": 0.3, "run_wait": 0.3, "blocked": 0.0, "other_cpu": 0.0, "gc": 0.0, "events": 0},
            id="counters-overlap-never-negative",
        ),
    ],
)
def test_span(end: Mark, expected: dict[str, float | int | None]) -> None:
    assert span(_mark(0.0, 0.0, 0.0 if end.run_wait is not None else None), end) == expected


PHASES = ["store", "convert", "decide", "check", "submit"]


@given(st.lists(st.sampled_from(PHASES), min_size=1, max_size=5, unique=True))
def test_phases_in_order_and_the_cycle_spans_them(names: list[str]) -> None:
    clock = iter(range(100))
    probe = CycleProbe(gc_cpu=lambda: 0.0, events=lambda: next(clock))
    probe.start()
    for name in names:
        probe.mark(name)
    phases = probe.phases()
    assert list(phases) == [*names, "cycle"]
    assert phases["cycle"]["events"] == sum(phases[name]["events"] for name in names) == len(names)
    assert phases["cycle"]["wall"] == pytest.approx(sum(phases[name]["wall"] for name in names), abs=0.01)


def test_schedstat_is_the_calling_threads() -> None:
    """A thread that only sleeps has spent next to no CPU, whatever the main thread did before."""
    before = thread_schedstat()
    if before is None:
        pytest.skip("no /proc/thread-self/schedstat here")
    began = time.thread_time()
    while time.thread_time() < began + 0.05:  # some CPU on this thread
        pass
    spent = time.thread_time() - began
    seen: list[tuple[float, float] | None] = []
    worker = threading.Thread(target=lambda: (time.sleep(0.02), seen.append(thread_schedstat())))
    worker.start()
    worker.join()
    after = thread_schedstat()
    assert after is not None and seen[0] is not None
    # Its first field is the thread's CPU (the clock ``time.thread_time`` reads), not its wait.
    assert after[0] - before[0] == pytest.approx(spent, abs=0.005)
    assert seen[0][0] < 0.04
