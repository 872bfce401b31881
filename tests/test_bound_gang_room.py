"""The LP bound leaves out the gangs no decision can place: those whose pods could not reach the
gang's minimum even with the whole free room to themselves. Its columns merge gangs' pods, so
without this it would place the part of such a gang that fits (two pods of a gang of three that
only two nodes can take) and report a gap no decision can close."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from test_gap_bound import ALLOCATE, FREE_GPUS, cluster, running_pods, waiting_jobs

from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import build_problem
from vcsat.solver.search.bound import _items, lp_level_bounds
from vcsat.solver.search.exact import solve_exact
from vcsat.solver.search.staged import SearchClock

# (GPUs held on each 8-GPU node by running pods, waiting (queue, priority, pods, GPUs per pod,
# count), placed work the bound may allow at priority 0 at most)
CASES = [
    # Three 8-GPU pods, two nodes with 8 free: the gang places nowhere.
    ([0, 0, 8], [("q3", 0, 3, 8, 1)], 0),
    # Two of them fit: the gang is the bound.
    ([0, 0, 8], [("q3", 0, 2, 8, 1)], None),
    # Four 2-GPU pods on nodes with 3 free each: one pod per node, three at most.
    ([5, 5, 5], [("q3", 0, 4, 2, 1)], 0),
    # The impossible gang left out, the 4-GPU pod that fits kept.
    ([0, 0, 4], [("q3", 0, 3, 8, 1), ("q3", 0, 1, 4, 1)], None),
]


@pytest.mark.parametrize(("held", "waiting", "at_most"), CASES)
def test_the_bound_is_the_proven_optimum_where_a_gang_cannot_fit(
    held: list[int], waiting: list[tuple[str, int, int, int, int]], at_most: int | None
) -> None:
    running = [("q1", n, gpus) for n, gpus in enumerate(held) if gpus]
    problem = build_problem(cluster([8 - gpus for gpus in held], running, waiting), ALLOCATE)
    result = solve_exact(problem, Assignment(), budget=20.0, clock=SearchClock(workers=1, wall=False))
    assert result.assignment is not None and result.optimal
    optimum = sum(
        problem.classes[c].value * k
        for c, k in result.assignment.count.items()
        if problem.gangs[problem.classes[c].gang].rank == 0
    )
    bound = lp_level_bounds(problem, {}, None).get(0, 0)
    assert bound == optimum  # one priority, nothing else asked: the LP is exact here
    if at_most is not None:
        assert bound <= at_most


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    free=FREE_GPUS, running=running_pods(max_size=6), waiting=waiting_jobs(max_size=5, pods=(1, 4), gpus=(1, 2, 4, 8))
)
def test_only_gangs_that_cannot_fit_are_left_out(
    free: list[int], running: list[tuple[str, int, int]], waiting: list[tuple[str, int, int, int, int]]
) -> None:
    """Every pod of the LP's columns is a pod of a gang whose minimum the free room could hold,
    and every such gang's pods are there (counted against a plain per-node count)."""
    problem = build_problem(cluster(free, running, waiting), ALLOCATE)
    free_gpus = [problem.free[n][problem.resource_index("nvidia.com/gpu")] for n in range(len(problem.nodes))]
    expected = 0
    for gang in problem.candidates:
        classes = [c for c in gang.classes if problem.shapes[problem.classes[c].shape].nodes]
        room = 0
        for c in classes:
            shape = problem.shapes[problem.classes[c].shape]
            room += min(len(problem.classes[c].pods), sum(free_gpus[n] // shape.gpus for n in shape.nodes))
        if room >= max(1, gang.need):
            expected += sum(len(problem.classes[c].pods) for c in classes)
    assert sum(item.pods for item in _items(problem)) == expected
