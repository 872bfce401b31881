"""The neighbourhood search (:mod:`vcsat.solver.search.neighbourhood`) only ever improves a decision.

- A table of small clusters on which an incumbent is below a proven-better solution (a
  low-priority job holds the room a higher-priority one could use, on a node left without a hole):
  the neighbourhood, with every slot fixed, swaps which gangs fill them and reaches the proven
  optimum's objective levels.
- A Hypothesis property over random small clusters and incumbents (the greedy's, less some of its
  gangs): the neighbourhood returns nothing or a solution strictly better than its incumbent in the
  objective's first levels, compared as one tuple, and the validator accepts its decision.
"""

from __future__ import annotations

import importlib

import pytest
from builders import gangs, node, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gap_bound import ALLOCATE, FREE_GPUS, cluster, running_pods, waiting_jobs

from vcsat.model import Decision, Snapshot, SolverStats
from vcsat.solver import check
from vcsat.solver.assignment import Assignment
from vcsat.solver.explain import outcomes
from vcsat.solver.greedy import greedy
from vcsat.solver.placement.decode import bindings
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.exact import solve_exact
from vcsat.solver.search.neighbourhood import free_nodes, improve
from vcsat.solver.search.staged import SearchClock

_solve_module = importlib.import_module("vcsat.solver.solve")
rank = _solve_module._lexicographic


def _without(problem: Problem, assignment: Assignment, dropped: set[int]) -> Assignment:
    """``assignment`` less the gangs in ``dropped`` (per-gang slots, as the greedy records them)."""
    out = Assignment(
        placed=assignment.placed - dropped,
        count={c: k for c, k in assignment.count.items() if problem.classes[c].gang not in dropped},
        shape_slots=dict(assignment.shape_slots),
        gang_slots={key: k for key, k in assignment.gang_slots.items() if key[0] not in dropped},
    )
    for (gang, shape, at), k in assignment.gang_slots.items():
        if gang in dropped:
            out.shape_slots[(shape, at)] -= k
    out.shape_slots = {key: k for key, k in out.shape_slots.items() if k > 0}
    return out


def _placing(problem: Problem, prefixes: list[str], at: int) -> Assignment:
    """Every pod of the gangs whose PodGroup name starts with one of ``prefixes``, on node ``at``."""
    out = Assignment()
    for gang in problem.gangs:
        if not any(gang.key.split("/")[-1].startswith(prefix) for prefix in prefixes):
            continue
        out.placed.add(gang.index)
        for c in gang.classes:
            k = len(problem.classes[c].pods)
            shape = problem.classes[c].shape
            out.count[c] = k
            out.shape_slots[(shape, at)] = out.shape_slots.get((shape, at), 0) + k
            out.gang_slots[(gang.index, shape, at)] = k
    return out


def _one_node(free: int, waiting: list[tuple[str, str, int, int]]) -> Snapshot:
    """One 8-GPU node with ``free`` GPUs (the rest held by a running q2 job); ``waiting``: (name,
    queue, priority, GPUs) one-pod jobs; queues q1 and q2 weighted 1 and 3."""
    pods, groups = gangs("run", queue="q2", node="n0", gpus=8 - free, cpu="1", created=-10)
    for j, (name, in_queue, priority, gpus) in enumerate(waiting):
        p, g = gangs(name, queue=in_queue, priority=priority, gpus=gpus, cpu="1", created=j)
        pods += p
        groups += g
    nodes = [node("n0", cpu=64, memory="512Gi", gpus=8)]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=[queue("q1", weight=1), queue("q2", weight=3)])


# name: (snapshot, the incumbent's gangs (by name prefix), all on node 0)
CASES = {
    # One GPU left: the low-priority job holds it, a high-priority one of the same queue waits.
    "same queue, higher priority": (
        _one_node(1, [("low", "q1", -100, 1), ("high", "q1", 1000, 1)]),
        ["low"],
    ),
    # Two GPUs: q1's low-priority pair holds them while q1's high-priority pair waits; q2 is above
    # its share already.
    "two pods swapped at once": (
        _one_node(
            2, [("lowa", "q1", -100, 1), ("lowb", "q1", -100, 1), ("higha", "q1", 1000, 1), ("highb", "q1", 1000, 1)]
        ),
        ["low"],
    ),
    # The same room, two queues: q2's low-priority work holds it, q1 (below its share) waits.
    "across queues": (
        _one_node(2, [("low", "q2", -100, 2), ("high", "q1", 0, 2)]),
        ["low"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_neighbourhood_reaches_the_proven_optimum(name: str) -> None:
    snap, prefixes = CASES[name]
    problem = build_problem(snap, ALLOCATE)
    incumbent = _placing(problem, prefixes, 0)
    assert free_nodes(problem, incumbent) == frozenset()  # no hole: every slot is fixed
    optimum = solve_exact(problem, incumbent, budget=20.0, clock=SearchClock(workers=1, wall=False))
    assert optimum.assignment is not None and optimum.optimal
    assert rank(problem, optimum.assignment) > rank(problem, incumbent)
    better = improve(problem, incumbent, budget=5.0, targets={}, clock=SearchClock(workers=1, wall=False), rank=rank)
    assert better is not None
    assert rank(problem, better.assignment) == rank(problem, optimum.assignment)
    assert check(snap, _decision(problem, better.assignment), ALLOCATE) == []


def _decision(problem: Problem, assignment: Assignment) -> Decision:
    return Decision(
        bindings=bindings(problem, assignment, assignment.shape_slots),
        podgroups=outcomes(problem, assignment),
        solver=SolverStats(status="FEASIBLE"),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    free=FREE_GPUS,
    running=running_pods(max_size=6),
    waiting=waiting_jobs(max_size=5),
    drop=st.sets(st.integers(0, 15), max_size=4),
)
def test_the_neighbourhood_never_returns_a_worse_or_invalid_solution(
    free: list[int],
    running: list[tuple[str, int, int]],
    waiting: list[tuple[str, int, int, int, int]],
    drop: set[int],
) -> None:
    snap = cluster(free, running, waiting)
    problem = build_problem(snap, ALLOCATE)
    incumbent = _without(problem, greedy(problem), drop)
    assert check(snap, _decision(problem, incumbent), ALLOCATE) == []
    better = improve(problem, incumbent, budget=1.0, targets={}, clock=SearchClock(workers=1, wall=False), rank=rank)
    if better is None:
        return
    assert rank(problem, better.assignment) > rank(problem, incumbent)
    assert check(snap, _decision(problem, better.assignment), ALLOCATE) == []
