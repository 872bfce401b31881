"""benchmarks/slow_host.py (``phases.py --slow-host F``): the slowed clock reads the CPU clock's
seconds since it was made times F, from the CPU clock's reading then; a factor below 1 (a faster
host) is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.scripts import load_script

slow_host = load_script("benchmarks/slow_host.py", "slow_host")


class FakeCpu:
    """A CPU clock that reads what the test sets."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("origin", "factor", "later", "expected"),
    [
        pytest.param(10.0, 1.0, 10.5, 10.5, id="same-host"),
        pytest.param(10.0, 1.5, 10.5, 10.75, id="half-again-slower"),
        pytest.param(2.0, 2.0, 2.0, 2.0, id="no-cpu-spent"),
        pytest.param(0.0, 3.0, 0.25, 0.75, id="from-zero"),
    ],
)
def test_slowed(origin: float, factor: float, later: float, expected: float) -> None:
    cpu = FakeCpu(origin)
    clock = slow_host.slowed(cpu, factor)
    cpu.now = later
    assert clock() == pytest.approx(expected)


def test_a_faster_host_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        slow_host.slowed(FakeCpu(0.0), 0.5)


@given(
    st.floats(0, 1e6),
    st.floats(1, 4),
    st.lists(st.floats(0, 10), min_size=2, max_size=5),
)
def test_every_interval_is_stretched_by_the_factor(origin: float, factor: float, steps: list[float]) -> None:
    """Whatever the CPU spends between two readings, the slowed clock advances F times as much."""
    cpu = FakeCpu(origin)
    clock = slow_host.slowed(cpu, factor)
    before = clock()
    for step in steps:
        cpu.now += step
        after = clock()
        assert after - before == pytest.approx(step * factor, rel=1e-9, abs=1e-6)
        before = after
