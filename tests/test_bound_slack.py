"""benchmarks/bound_slack.py: the LP's rows solved with whole pods bound each placed-work level
between the decision's value and the LP's bound, and below the LP's exactly where whole pods
bite (a cpu-bound node takes two and a half pods in the LP, two in any decision).

The property checks the integer program against exact optima: a decision the exact search proves
optimal (no gap allowed) has, at each placed-work level, the most any decision holding its levels
above can place; the integer program at those held levels must reach it."""

from __future__ import annotations

from typing import Any

import pytest
from builders import gangs, node, snapshot
from hypothesis import HealthCheck, given, settings
from test_gap_bound import ALLOCATE, FREE_GPUS, cluster, running_pods, waiting_jobs
from test_gap_bound import CASES as GAP_CASES

from tests.scripts import load_script
from vcsat.model import Snapshot
from vcsat.solver import solve
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.objectives.placement import placed_work
from vcsat.solver.problem import build_problem

bound_slack = load_script("benchmarks/bound_slack.py", "bound_slack")
gap_sides = load_script("benchmarks/gap_sides.py", "gap_sides")


def _cpu_node(cpu: str, pods: int, each: str) -> Snapshot:
    """One node of ``cpu`` cores and no GPUs; ``pods`` one-pod jobs of ``each`` cores."""
    made, groups = gangs("w", pods, cpu=each, memory="1Gi")
    return snapshot(nodes=[node("n0", cpu=cpu, memory="64Gi")], pods=made, groups=groups)


CASES: dict[str, tuple[Snapshot, dict[str, int]]] = {
    # 10 cores hold 2.5 pods of 4 in the LP's cpu row; two in any decision (a pod is 400 of 1000).
    "cpu row, a half pod": (_cpu_node("10", 3, "4"), {"value": 800, "lp": 1000, "integer": 800}),
    # 12 cores hold three pods of 4 exactly (334 of 1000 each): nothing for whole pods to take.
    "cpu row, whole pods": (_cpu_node("12", 4, "4"), {"value": 1002, "lp": 1002, "integer": 1002}),
    # Eight GPUs and pods of three: the LP's blocks of three already say two pods (375 each).
    "gpu blocks": (
        cluster([8], [], [("q1", 0, 1, 3, 3)]),
        {"value": 750, "lp": 750, "integer": 750},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_whole_pods_bound_the_level_where_the_lp_takes_part_of_one(name: str) -> None:
    snap, expected = CASES[name]
    decision = solve(snap, ALLOCATE)
    problem = build_problem(snap, ALLOCATE)
    placed, fair = bound_slack.decision_values(problem, decision)
    (level,) = bound_slack.slack(problem, placed, fair, 10.0)
    assert {key: level[key] for key in expected} == expected
    assert level["proven"]


def _optimal_levels(snap: Snapshot) -> tuple[Any, list[dict[str, Any]]]:
    """The exact search's decision (no gap allowed) and the levels at its values."""
    decision = solve(snap, ALLOCATE)
    problem = build_problem(snap, ALLOCATE)
    placed, fair = bound_slack.decision_values(problem, decision)
    return decision, bound_slack.slack(problem, placed, fair, 10.0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(free=FREE_GPUS, running=running_pods(max_size=6), waiting=waiting_jobs(max_size=5, gpus=(1, 2, 3, 4)))
def test_whole_pods_never_bound_below_the_proven_optimum_nor_above_the_lp(
    free: list[int], running: list[tuple[str, int, int]], waiting: list[tuple[str, int, int, int, int]]
) -> None:
    decision, levels = _optimal_levels(cluster(free, running, waiting))
    assert decision.solver.status == "OPTIMAL"  # no gap allowed, and room for the search to prove it
    for level in levels:
        assert level["integer"] is not None and level["proven"]
        assert level["integer"] <= level["lp"]
        # Proven optimal, the decision's value is the most any decision holding its levels above
        # can place; the exact model's rows are tighter than the LP's, so the integer program at
        # those held levels reaches it.
        assert level["value"] <= level["integer"]


def test_the_levels_read_off_the_decision_are_its_own() -> None:
    # Three queues with work waiting at three priorities: fair-share levels above placed work.
    snap = GAP_CASES["contended"]
    decision = solve(snap, ALLOCATE)
    problem = build_problem(snap, ALLOCATE)
    placed, fair = bound_slack.decision_values(problem, decision)
    assignment = gap_sides.decided_assignment(problem, decision)
    assert fair == fair_share_values(problem, assignment) and fair
    assert placed == {rank: placed_work(problem, assignment, rank) for rank in (1000, 0, -100)}
