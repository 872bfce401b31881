"""The allocate search runs a neighbourhood of the warm start before the full model
(:func:`vcsat.solver.solve._search`): what it returns is never below the warm start, and with the
time to finish it reaches CP-SAT's proven optimum of the objective's first levels.

- A table of small clusters on which the greedy decision is below the proven optimum (a queue's
  low-priority pods hold the room its own or a poorer queue's higher-priority work could use): the
  search, neighbourhood first, reaches the optimum's levels, and the cycle's decision passes the
  validator.
- A Hypothesis property over random small clusters: the search's solution ranks at least as high as
  the greedy's, equals the proven optimum's levels whenever CP-SAT proves one, and the cycle's
  decision passes the validator.
"""

from __future__ import annotations

import importlib

import pytest
from hypothesis import HealthCheck, given, settings
from test_gap_bound import ALLOCATE, FREE_GPUS, cluster, running_pods, waiting_jobs

from vcsat.model import Snapshot
from vcsat.solver import check, solve
from vcsat.solver.greedy import greedy
from vcsat.solver.problem import build_problem
from vcsat.solver.search.exact import solve_exact
from vcsat.solver.search.staged import SearchClock

_solve_module = importlib.import_module("vcsat.solver.solve")
rank = _solve_module._lexicographic


def _clock() -> SearchClock:
    return SearchClock(workers=1, wall=False)


def _assert_reaches_the_optimum(snap: Snapshot) -> bool | None:
    """Search ``snap`` neighbourhood first. None when CP-SAT proved no optimum to compare with, else
    whether the greedy decision ranks below that optimum."""
    problem = build_problem(snap, ALLOCATE)
    hint = greedy(problem)
    optimum = solve_exact(problem, hint, budget=20.0, clock=_clock())
    result = _solve_module._search(problem, hint, 10.0, {}, _clock())
    found = result.assignment if result.assignment is not None else hint
    assert rank(problem, found) >= rank(problem, hint)
    decision = solve(snap, ALLOCATE, wall=False)
    assert check(snap, decision, ALLOCATE) == []
    if optimum.assignment is None or not optimum.optimal:
        return None
    assert rank(problem, found) == rank(problem, optimum.assignment)
    return rank(problem, hint) < rank(problem, optimum.assignment)


# name: (free GPUs per node, running (queue, node, GPUs), waiting (queue, priority, pods, GPUs, count))
CASES = {
    # q1 runs most of the cluster (above its share); its low-priority pairs arrive first.
    "a queue above its share": (
        [4, 4, 8],
        [("q1", 0, 4), ("q1", 1, 4)],
        [("q1", -100, 1, 2, 3), ("q2", 0, 2, 4, 1), ("q1", 1000, 1, 8, 1)],
    ),
    # Three queues, mixed sizes, one node partly used.
    "three queues, mixed sizes": (
        [8, 6, 2],
        [("q3", 1, 2), ("q1", 2, 6)],
        [("q1", 0, 1, 1, 4), ("q2", -100, 2, 2, 2), ("q3", 1000, 1, 4, 2)],
    ),
    # One node with room for a single 4-GPU pod: q2's low-priority job arrives first, q3 (weighted
    # 4, holding nothing) waits with 4-GPU jobs of three pods, q2's own high-priority pairs after.
    "a poorer queue's fair share": (
        [4, 0],
        [],
        [("q2", -100, 3, 4, 1), ("q3", 0, 3, 4, 2), ("q2", 1000, 3, 2, 1), ("q2", 1000, 2, 2, 1)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_search_reaches_the_proven_optimum(name: str) -> None:
    free, running, waiting = CASES[name]
    assert _assert_reaches_the_optimum(cluster(free, running, waiting)) is True  # the greedy is below it


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    free=FREE_GPUS,
    running=running_pods(max_size=5),
    waiting=waiting_jobs(max_size=4),
)
def test_the_search_never_ranks_below_the_greedy_and_meets_proven_optima(
    free: list[int], running: list[tuple[str, int, int]], waiting: list[tuple[str, int, int, int, int]]
) -> None:
    _assert_reaches_the_optimum(cluster(free, running, waiting))
