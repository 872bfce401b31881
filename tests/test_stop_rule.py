"""The search's stop rule (:mod:`vcsat.solver.search.stop`): a decision within the tolerance is final.

- A table of small clusters and tolerances: when the greedy decision's proven gap is positive and
  within ``Policy.relative_gap``, no search runs (no deterministic time used), the decision is the
  greedy's and says ``WITHIN_GAP``; when it is not within it (or the tolerance is 0), the search
  is started and the status is never ``WITHIN_GAP`` unless the final gap is within the tolerance.
- A Hypothesis property over random small clusters and tolerances: the decision is never worse than
  the greedy's in the objective's first levels (fair-share tiers, then placed work by priority, as
  one tuple), the validator accepts it, and ``WITHIN_GAP`` is said exactly when the decision is
  not proven optimal and its gap is within a positive tolerance.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gap_bound import ALLOCATE, FREE_GPUS, cluster, running_pods, waiting_jobs

from vcsat.model import Decision, Policy, Snapshot, relative_gap
from vcsat.solver import check, solve
from vcsat.solver.search.stop import skip_search, within_tolerance

_solve_module = importlib.import_module("vcsat.solver.solve")


def _solved(snap: Snapshot, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> tuple[Decision, tuple[int, ...], bool]:
    """The decision, its objective's first levels (read off the assignment the cycle explains) and
    whether the staged search was started."""
    seen: dict[str, Any] = {"searched": False}
    explain, exact = _solve_module.outcomes, _solve_module.solve_exact

    def spy(problem: Any, assignment: Any) -> Any:
        seen["rank"] = _solve_module._lexicographic(problem, assignment)
        return explain(problem, assignment)

    def search(*args: Any, **kwargs: Any) -> Any:
        seen["searched"] = True
        return exact(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(_solve_module, "outcomes", spy)
        patch.setattr(_solve_module, "solve_exact", search)
        decision = solve(snap, policy)
    return decision, seen["rank"], seen["searched"]


@pytest.mark.parametrize(
    ("objective", "bound", "tolerance", "within", "skip"),
    [
        (99.0, 100.0, 0.01, True, True),
        (98.0, 100.0, 0.01, False, False),
        (100.0, 100.0, 0.01, True, False),  # at the bound: the search may still prove it optimal
        (99.0, 100.0, 0.0, False, False),  # 0 asks for the full search
        (100.0, 100.0, 0.0, False, False),
        (0.0, 0.5, 0.6, True, True),  # the floor of 1 in the gap's denominator
    ],
)
def test_the_rule(objective: float, bound: float, tolerance: float, within: bool, skip: bool) -> None:
    assert within_tolerance(objective, bound, tolerance) is within
    assert skip_search(objective, bound, tolerance) is skip


# name: (free GPUs per node, running (queue, node, GPUs), waiting (queue, priority, pods, GPUs, count))
CLUSTERS = {
    # The greedy places less than the LP bound (two 2x4-GPU gangs cannot both fit beside the rest).
    "greedy short of its bound": (
        [6, 6],
        [("q3", 0, 2)],
        [("q1", 0, 2, 4, 2), ("q2", 1000, 1, 1, 3), ("q3", 0, 3, 2, 1)],
    ),
    # The greedy meets its bound: the search runs and proves it.
    "greedy at its bound": ([3, 5], [("q1", 0, 2)], [("q1", 0, 2, 3, 1), ("q2", 1000, 1, 2, 2), ("q3", -100, 1, 1, 3)]),
}


@pytest.mark.parametrize("name", sorted(CLUSTERS))
@pytest.mark.parametrize("tolerance", [0.0, 0.001, 0.1, 0.5])
def test_the_search_stops_within_the_tolerance_and_runs_outside_it(
    name: str, tolerance: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = cluster(*CLUSTERS[name])
    policy = ALLOCATE.model_copy(update={"relative_gap": tolerance})
    greedy_only, greedy_rank, _ = _solved(snap, policy.model_copy(update={"search": False}), monkeypatch)
    assert greedy_only.solver.status == "FALLBACK"
    greedy_gap = relative_gap(greedy_only.solver.objective, greedy_only.solver.bound)
    decision, rank, searched = _solved(snap, policy, monkeypatch)
    assert check(snap, decision, policy) == []
    assert rank >= greedy_rank
    if 0 < greedy_gap <= tolerance:
        assert decision.solver.status == "WITHIN_GAP"
        assert not searched
        assert decision.solver.deterministic_time == 0.0
        assert decision.bindings == greedy_only.bindings
        assert (decision.solver.objective, decision.solver.bound) == (
            greedy_only.solver.objective,
            greedy_only.solver.bound,
        )
    else:
        assert searched
        final = relative_gap(decision.solver.objective, decision.solver.bound)
        assert (decision.solver.status == "WITHIN_GAP") == (
            decision.solver.status != "OPTIMAL" and tolerance > 0 and final <= tolerance
        )
        if tolerance == 0:
            assert decision.solver.status != "WITHIN_GAP"


def test_the_table_case_is_short_of_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    # Keeps the table honest: one cluster has a positive greedy gap between the tolerances tried,
    # so both sides of the rule are exercised.
    snap = cluster(*CLUSTERS["greedy short of its bound"])
    greedy_only, _, _ = _solved(snap, ALLOCATE.model_copy(update={"search": False}), monkeypatch)
    assert 0.001 < relative_gap(greedy_only.solver.objective, greedy_only.solver.bound) <= 0.5


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    free=FREE_GPUS,
    running=running_pods(max_size=6),
    waiting=waiting_jobs(max_size=5),
    tolerance=st.sampled_from([0.0, 0.001, 0.01, 0.05, 0.2, 1.0]),
)
def test_never_worse_than_the_greedy_and_the_status_tells_the_truth(
    free: list[int],
    running: list[tuple[str, int, int]],
    waiting: list[tuple[str, int, int, int, int]],
    tolerance: float,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snap = cluster(free, running, waiting)
    policy = ALLOCATE.model_copy(update={"relative_gap": tolerance})
    _, greedy_rank, _ = _solved(snap, policy.model_copy(update={"search": False}), monkeypatch)
    decision, rank, _ = _solved(snap, policy, monkeypatch)
    assert check(snap, decision, policy) == []
    assert rank >= greedy_rank
    gap = relative_gap(decision.solver.objective, decision.solver.bound)
    said = decision.solver.status == "WITHIN_GAP"
    assert said == (decision.solver.status != "OPTIMAL" and tolerance > 0 and gap <= tolerance)
