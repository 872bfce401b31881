"""The simulator's vcsat decides on deterministic budgets only: a cycle's wall deadline, which a
machine busy with other work can reach first, never cuts its searches, so a benchmark compares the
schedulers and not the machine's load."""

from __future__ import annotations

import pytest

from tests.builders import node, pod, snapshot
from vcsat.adapters.sim.schedulers import ABLATIONS, VCSAT, VCSAT_EVICTING, make_scheduler
from vcsat.solver import solve


@pytest.fixture
def wall_always_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wall stop on (as outside the unit tests) and every deadline as good as reached: a search
    that heeds the wall clock is stopped before it starts."""
    monkeypatch.setattr("vcsat.solver.search.staged.WALL_STOP", True)
    monkeypatch.setattr("vcsat.solver.search.staged.MIN_WALL_SECONDS", 1e9)


SNAP = snapshot(
    nodes=[node("n1", cpu="4", memory="16Gi"), node("n2", cpu="4", memory="16Gi")],
    pods=[pod("a", cpu="3"), pod("b", cpu="3"), pod("c", cpu="2"), pod("d", cpu="2"), pod("e", cpu="2")],
)
"""Two 4-core nodes, pods of 3, 3, 2, 2 and 2 cores: the greedy start is not proved optimal, so the
cycle needs its search."""


@pytest.mark.usefixtures("wall_always_out")
def test_the_wall_deadline_would_stop_a_plain_solve() -> None:
    scheduler = make_scheduler(VCSAT, time_limit_s=1.0)
    stats = solve(SNAP, scheduler.policy).solver
    assert stats.wall_stopped is True
    assert stats.status == "FALLBACK"


@pytest.mark.usefixtures("wall_always_out")
@pytest.mark.parametrize("name", [VCSAT, VCSAT_EVICTING, *ABLATIONS])
def test_the_simulator_solves_on_deterministic_budgets_only(name: str) -> None:
    scheduler = make_scheduler(name, time_limit_s=1.0)
    stats = scheduler.solve(SNAP, scheduler.policy).solver
    assert stats.wall_stopped is False
    assert stats.status == ("FALLBACK" if name == "vcsat-greedy" else "OPTIMAL")
