"""Who else ran during a live cycle (``cycle_threads``): the other threads' CPU by name, a pool's
workers summed, the cycle's own thread left out, and the machine's other processes; read from
/proc files as the kernel writes them."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vcsat.adapters.live.cycle_threads import CycleThreads, Reading, box_busy, split, task_times, thread_name

CYCLE = 1


def _reading(wall: float, tasks: dict[int, float], process: float = 0.0, box: float | None = 0.0) -> Reading:
    return Reading(wall=wall, tasks={tid: (cpu, 0.0) for tid, cpu in tasks.items()}, process_cpu=process, box_busy=box)


NAMES = {1: "MainThread", 2: "informer-pods", 3: "vcsat-apply_0", 4: "vcsat-apply_1", 5: "status-writer"}


@pytest.mark.parametrize(
    ("start", "end", "threads", "others"),
    [
        pytest.param(
            _reading(0.0, {1: 1.0, 2: 0.5}),
            _reading(1.0, {1: 1.4, 2: 0.5}, process=0.4, box=0.4),
            {},
            0.0,
            id="only-the-cycle-ran",
        ),
        pytest.param(
            _reading(0.0, {1: 0.0, 2: 0.5}),
            _reading(1.0, {1: 0.4, 2: 0.55}, process=0.45, box=1.9),
            {"informer-pods": 0.05},
            1.45,
            id="a-watch-decoded-and-others-ran",
        ),
        pytest.param(
            _reading(0.0, {1: 0.0, 3: 1.0, 4: 2.0}),
            _reading(1.0, {1: 0.3, 3: 1.01, 4: 2.02}, process=0.33, box=0.33),
            {"vcsat-apply": 0.03},
            0.0,
            id="a-pool-summed-under-its-name",
        ),
        pytest.param(
            _reading(0.0, {1: 0.0}),
            _reading(1.0, {1: 0.3, 5: 0.02, 9: 0.01}, process=0.33, box=0.33),
            {"status-writer": 0.02, "other": 0.01},
            0.0,
            id="started-meanwhile-and-unnamed",
        ),
        pytest.param(
            _reading(0.0, {1: 0.0, 2: 3.0}),
            _reading(1.0, {1: 0.3}, process=0.3, box=None),
            {},
            None,
            id="ended-meanwhile-and-no-proc-stat",
        ),
        pytest.param(
            _reading(0.0, {1: 0.0}),
            _reading(1.0, {1: 0.3}, process=0.3, box=0.29),
            {},
            0.0,
            id="ticks-coarser-than-the-process-never-negative",
        ),
    ],
)
def test_split(start: Reading, end: Reading, threads: dict[str, float], others: float | None) -> None:
    out = split(start, end, NAMES, CYCLE, cpus=2)
    assert out["threads"] == threads
    assert list(out["threads"]) == sorted(threads, key=lambda name: -threads[name])  # type: ignore[call-overload]
    assert out["others_cpu"] == others
    assert out["capacity"] == 2.0
    assert out["process_cpu"] == round(end.process_cpu - start.process_cpu, 3)


def test_totals_since_start_by_name() -> None:
    """Each name's CPU since its threads started (a pool summed, the cycle's thread as ``cycle``)."""
    start = _reading(0.0, {1: 1.0, 3: 1.0})
    end = _reading(1.0, {1: 1.5, 3: 1.25, 4: 0.5, 2: 0.125})
    out = split(start, end, NAMES, CYCLE, cpus=2)
    assert out["threads_total"] == {"cycle": 1.5, "informer-pods": 0.125, "vcsat-apply": 1.75}


@pytest.mark.parametrize(
    ("name", "reported"),
    [("vcsat-apply_12", "vcsat-apply"), ("informer-pods", "informer-pods"), ("metrics-8080", "metrics-8080")],
)
def test_thread_name(name: str, reported: str) -> None:
    assert thread_name(name) == reported


@given(
    st.dictionaries(
        st.integers(2, 6),
        st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)),
        max_size=5,
    ),
    st.integers(0, 10_000),
)
def test_threads_sum_to_what_the_others_ran(tasks: dict[int, tuple[int, int]], cycle_ms: int) -> None:
    """The named threads' CPU adds up to every thread's but the cycle's (each read in ms)."""
    start = _reading(0.0, {CYCLE: 0.0, **{tid: before / 1000 for tid, (before, _) in tasks.items()}})
    end = _reading(
        1.0, {CYCLE: cycle_ms / 1000, **{tid: (before + used) / 1000 for tid, (before, used) in tasks.items()}}
    )
    out = split(start, end, NAMES, CYCLE, cpus=2)
    assert sum(out["threads"].values()) == pytest.approx(  # type: ignore[attr-defined]
        sum(used for _, used in tasks.values()) / 1000, abs=1e-6
    )
    assert not any(name.rstrip("0123456789").endswith("_") for name in out["threads"])  # type: ignore[attr-defined]


def test_proc_files_read(tmp_path: Path) -> None:
    for tid, line in {"11": "2000000000 500000000 7\n", "12": "1500000 0 1\n", "13": "garbled\n"}.items():
        (tmp_path / tid).mkdir()
        (tmp_path / tid / "schedstat").write_text(line)
    assert task_times(str(tmp_path)) == {11: (2.0, 0.5), 12: (0.0015, 0.0)}
    assert task_times(str(tmp_path / "absent")) == {}
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice, in ticks of 1/100 s
    stat.write_text("cpu  100 20 30 1000 50 4 6 10 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
    assert box_busy(str(stat)) == pytest.approx(1.70)
    stat.write_text("intr 1 2 3\n")
    assert box_busy(str(stat)) is None


def test_a_busy_thread_is_named_and_the_cycle_thread_is_not() -> None:
    """Live, on this machine: a named thread spinning while the probe runs is what the split shows."""
    release = threading.Event()

    def spin() -> None:
        until = time.thread_time() + 0.05
        while time.thread_time() < until:
            pass
        release.wait(5)

    probe = CycleThreads()
    probe.start()
    worker = threading.Thread(target=spin, name="spinner", daemon=True)
    worker.start()
    until = time.thread_time() + 0.05
    while time.thread_time() < until:
        pass
    time.sleep(0.2)
    out = probe.end()
    release.set()
    worker.join()
    assert out is not None
    assert out["threads"]["spinner"] >= 0.04  # type: ignore[index]
    assert "MainThread" not in out["threads"]  # type: ignore[operator]
    assert out["process_cpu"] >= 0.09  # type: ignore[operator]
