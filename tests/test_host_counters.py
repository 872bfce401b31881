"""benchmarks/host_counters.py (``phases.py --counters``): the process's counters over a cycle are
the differences of two samples, the collector's passes are counted by generation, the paces are
measured, and a real cycle reports them with no collector pass inside it (the solver pauses it)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from tests.scripts import REPO, load_script
from vcsat.adapters.cli import main

host_counters = load_script("benchmarks/host_counters.py", "host_counters")
phases = load_script("benchmarks/phases.py", "phases_for_counters")
Sample = host_counters.Sample


def _sample(cpu: float, faults: int, switches: int, steal: int | None) -> object:
    return Sample(utime=cpu, stime=cpu / 10, minflt=faults, majflt=0, nvcsw=switches, nivcsw=2 * switches, steal=steal)


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param(
            Sample(1.0, 0.1, 100, 0, 5, 7, 40),
            Sample(1.65, 0.15, 26_600, 1, 6, 120, 43),
            {"utime": 0.65, "stime": 0.05, "minflt": 26_500, "majflt": 1, "nvcsw": 1, "nivcsw": 113, "steal": 3},
            id="a-cycle",
        ),
        pytest.param(
            Sample(2.0, 0.2, 10, 0, 1, 1, None),
            Sample(2.5, 0.4, 20, 0, 1, 3, 9),
            {"utime": 0.5, "stime": 0.2, "minflt": 10, "majflt": 0, "nvcsw": 0, "nivcsw": 2, "steal": None},
            id="no-steal-before",
        ),
        pytest.param(
            Sample(0.0, 0.0, 0, 0, 0, 0, 0),
            Sample(0.0, 0.0, 0, 0, 0, 0, 0),
            {"utime": 0.0, "stime": 0.0, "minflt": 0, "majflt": 0, "nvcsw": 0, "nivcsw": 0, "steal": 0},
            id="nothing-happened",
        ),
    ],
)
def test_difference(before: object, after: object, expected: dict[str, object]) -> None:
    assert host_counters.difference(before, after) == expected


_samples = st.builds(
    _sample,
    st.integers(0, 10**6).map(lambda ms: ms / 1000),
    st.integers(0, 10**7),
    st.integers(0, 10**5),
    st.one_of(st.none(), st.integers(0, 10**6)),
)


@given(_samples, _samples, _samples)
def test_differences_add_up(a: object, b: object, c: object) -> None:
    """Counting a→b then b→c counts what a→c counts (seconds to the millisecond's rounding)."""
    first, second, whole = (
        host_counters.difference(a, b),
        host_counters.difference(b, c),
        host_counters.difference(a, c),
    )
    for name, value in whole.items():
        if value is None or first[name] is None or second[name] is None:
            assert (value is None) == (a.steal is None or c.steal is None)
        elif isinstance(value, float):
            assert first[name] + second[name] == pytest.approx(value, abs=0.0011)
        else:
            assert first[name] + second[name] == value


def test_collector_passes_by_generation() -> None:
    with host_counters.collector_passes() as passes:
        gc.collect(1)
        gc.collect(1)
        gc.collect(2)
    assert [passes[generation][0] for generation in range(3)] == [0, 2, 1]
    assert all(passes[generation][1] >= 0 for generation in range(3))
    gc.collect(0)  # after the block: not counted, and the watch is gone
    assert passes[0][0] == 0


def test_paces_are_measured() -> None:
    """The python pace faults no page; the fault pace faults every page it measures (one MiB)."""
    before = host_counters.take()
    assert host_counters.python_pace(rounds=5) >= 0
    between = host_counters.take()
    assert host_counters.fault_pace(mib=1) >= 0
    after = host_counters.take()
    assert host_counters.difference(before, between)["minflt"] < 64
    assert host_counters.difference(between, after)["minflt"] >= (1 << 20) // host_counters.PAGE


class Counted:
    """An object that counts the reads of its attribute dict."""

    reads = 0

    def __getattribute__(self, name: str) -> object:
        if name == "__dict__":
            Counted.reads += 1
        return object.__getattribute__(self, name)


def test_heap_pace_reads_every_object_every_round() -> None:
    Counted.reads = 0
    objects = [Counted() for _ in range(7)]
    assert host_counters.heap_pace(objects, rounds=3) >= 0
    assert Counted.reads == 21


def test_a_cycle_reports_its_counters_and_no_collector_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))  # phases.py imports host_counters as a script does
    instance = tmp_path / "cluster.json"
    made = CliRunner().invoke(
        main, ["generate", "--nodes", "6", "--pending-jobs", "8", "--seed", "2", "-o", str(instance)]
    )
    assert made.exit_code == 0, made.output
    report = phases.run(instance, 30.0, None, counters=True)
    counters = report["counters"]
    assert set(counters) == {
        "utime",
        "stime",
        "minflt",
        "majflt",
        "nvcsw",
        "nivcsw",
        "steal",
        "python_ms",
        "fault_us",
        "python_ms_after",
        "fault_us_after",
        "heap_ms",
        "gc",
    }
    assert counters["utime"] + counters["stime"] >= 0
    # The read, the solve and the check each pause the collector (vcsat.solver.pauses).
    assert all(passes == [0, 0.0] for passes in counters["gc"].values())
    assert "counters" not in phases.run(instance, 30.0, None)
