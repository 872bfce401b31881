"""The searched decision is topped up with the gangs it leaves out (:mod:`vcsat.solver.search.top_up`).

On a contended cluster the staged search may raise a fair-share tier and then run out of budget
in the placed-work stages, ending with whole priorities of work dropped that the room it leaves
still takes (benchmarks/RESULTS.md, session 11: contended seed 7). A search cut short is simulated
here by CP-SAT's proven optimum with the gangs of the lowest priorities taken out.

- A table of small contended and over-served clusters: topping up the cut decision gives back
  CP-SAT's proven optimum of every level of the objective's first levels, and the cycle, handed
  the cut decision by its search, decides that optimum (the validator accepts it); without the
  top-up it would keep the cut decision or the greedy's, both ranked lower on these cases.
- A Hypothesis property over random small clusters with a random set of gangs taken out of the
  greedy's decision: the top-up keeps every placement it was given, ranks at least as high, and
  the cycle handed it decides something the validator accepts, never below the greedy's.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gap_bound import ALLOCATE, CASES, FREE_GPUS, cluster, running_pods, waiting_jobs
from test_stop_rule import _solved

from vcsat.model import Snapshot
from vcsat.solver import check
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import greedy
from vcsat.solver.placement.decode import bindings
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.exact import ExactResult, solve_exact
from vcsat.solver.search.staged import SearchClock
from vcsat.solver.search.top_up import top_up

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic


def _without(problem: Problem, assignment: Assignment, dropped: set[int]) -> Assignment:
    """``assignment`` with the gangs ``dropped`` taken out, every other pod on the node the decode
    gives it (slot by slot, gang by gang, as the greedy records them)."""
    class_of = {pod.key: c for c, pod_class in enumerate(problem.classes) for pod in pod_class.pods}
    node_of = {node.name: n for n, node in enumerate(problem.nodes)}
    out = Assignment()
    for binding in bindings(problem, assignment, assignment.shape_slots):
        c = class_of[binding.pod]
        g = problem.classes[c].gang
        if g in dropped:
            continue
        s, n = problem.classes[c].shape, node_of[binding.node]
        out.placed.add(g)
        out.count[c] = out.count.get(c, 0) + 1
        out.shape_slots[(s, n)] = out.shape_slots.get((s, n), 0) + 1
        out.gang_slots[(g, s, n)] = out.gang_slots.get((g, s, n), 0) + 1
    return out


def _cycle_with_search(snap: Snapshot, cut: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, tuple[int, ...], bool]:
    """The cycle whose staged search returns ``cut(problem)`` (not proven optimal) and whose
    neighbourhood finds nothing."""

    def search(problem: Problem, hint: Assignment, **kwargs: Any) -> ExactResult:
        if kwargs.get("free_nodes") is not None:
            return ExactResult(None, False)
        return ExactResult(cut(problem), False)

    with monkeypatch.context() as patch:
        patch.setattr(_solve_module, "solve_exact", search)
        return _solved(snap, ALLOCATE, monkeypatch)


def _optimum(problem: Problem) -> Assignment:
    result = solve_exact(problem, greedy(problem), budget=20.0, clock=SearchClock(workers=1, wall=False))
    assert result.assignment is not None and result.optimal
    return result.assignment


# (case of tests/test_gap_bound.py, the highest priority whose gangs the cut search dropped)
CUTS = [("over-served", -100), ("contended", -100), ("contended", 0), ("contended", 1000)]


@pytest.mark.parametrize(("name", "dropped_up_to"), CUTS)
def test_the_top_up_gives_back_the_proven_optimum(
    name: str, dropped_up_to: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = CASES[name]
    problem = build_problem(snap, ALLOCATE)
    optimum = _optimum(problem)
    best = _levels(problem, optimum)

    def cut(problem: Problem) -> Assignment:
        dropped = {g for g in optimum.placed if problem.gangs[g].rank <= dropped_up_to}
        return _without(problem, optimum, dropped)

    short = cut(problem)
    assert _levels(problem, short) < best  # the cut matters
    topped = top_up(problem, short)
    assert topped.placed >= short.placed
    assert _levels(problem, topped) == best
    decision, rank, _ = _cycle_with_search(snap, cut, monkeypatch)
    assert check(snap, decision, ALLOCATE) == []
    assert rank == best


def test_without_the_top_up_the_over_served_cut_ranks_below_the_optimum() -> None:
    """What the first row needs the top-up for: the cut decision and the greedy's both rank lower."""
    problem = build_problem(CASES["over-served"], ALLOCATE)
    optimum = _optimum(problem)
    short = _without(problem, optimum, {g for g in optimum.placed if problem.gangs[g].rank <= -100})
    assert max(_levels(problem, short), _levels(problem, greedy(problem))) < _levels(problem, optimum)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    free=FREE_GPUS,
    running=running_pods(max_size=6, gpus=[1, 2, 4, 8]),
    waiting=waiting_jobs(5, pods=(1, 2), gpus=(1, 2), count=(1, 8)),
    dropped=st.lists(st.booleans(), min_size=40, max_size=40),
)
def test_the_top_up_keeps_what_it_is_given_and_the_validator_accepts_it(
    free: list[int],
    running: list[tuple[str, int, int]],
    waiting: list[tuple[str, int, int, int, int]],
    dropped: list[bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snap = cluster(free, running, waiting)
    problem = build_problem(snap, ALLOCATE)
    first = greedy(problem)

    def cut(problem: Problem) -> Assignment:
        return _without(problem, first, {g for g in first.placed if dropped[g % len(dropped)]})

    short = cut(problem)
    topped = top_up(problem, short)
    assert topped.placed >= short.placed
    assert all(topped.shape_slots.get(key, 0) >= k for key, k in short.shape_slots.items())
    assert all(topped.count.get(c, 0) >= k for c, k in short.count.items())
    assert _levels(problem, topped) >= _levels(problem, short)
    decision, rank, _ = _cycle_with_search(snap, cut, monkeypatch)
    assert check(snap, decision, ALLOCATE) == []
    assert rank >= _levels(problem, first)
