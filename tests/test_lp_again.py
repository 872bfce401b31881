"""A decision bounded on the LP of the one before it proves what an LP of its own proves.

The cycle bounds each decision that replaces the one before (the second fill, the search, the
neighbourhood rounds, the exchange): :meth:`LpBounds.again` solves the same LP with its floors
moved instead of building another. Here, on the small weighted clusters of ``test_gap_bound``,
the placed-work and fair-share bounds read that way equal those of a fresh LP, whichever of the
bounds sharing the LP is read first, and in any order: each sets every floor it relies on.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from test_gap_bound import ALLOCATE, CASES, FREE_GPUS, cluster, running_pods, waiting_jobs

from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.objectives.placement import placed_work
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.bound import lp_bounds
from vcsat.solver.search.exact import solve_exact
from vcsat.solver.search.staged import SearchClock


def _levels(problem: Problem, assignment: Assignment) -> tuple[dict[int, int], dict[int, int]]:
    placed = {rank: placed_work(problem, assignment, rank) for rank in {g.rank for g in problem.candidates}}
    return placed, fair_share_values(problem, assignment)


def _same_as_fresh(problem: Problem, decisions: list[Assignment]) -> None:
    """Each decision bounded on the first one's LP, in turn, proves what a fresh LP proves; the
    fair-share bounds are read last, the latest decision's first (as a cycle reads them)."""
    chain = [lp_bounds(problem, *_levels(problem, decisions[0]))]
    for decision in decisions[1:]:
        chain.append(chain[-1].again(*_levels(problem, decision)))
    fresh = [lp_bounds(problem, *_levels(problem, decision)) for decision in decisions]
    assert [bounds.placed for bounds in chain] == [bounds.placed for bounds in fresh]
    for shared, own in zip(reversed(chain), reversed(fresh), strict=True):
        assert shared.fair_bounds() == own.fair_bounds()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(free=FREE_GPUS, running=running_pods(max_size=6), waiting=waiting_jobs(max_size=5))
def test_a_decision_bounded_on_the_shared_lp_reads_what_a_fresh_lp_proves(
    free: list[int], running: list[tuple[str, int, int]], waiting: list[tuple[str, int, int, int, int]]
) -> None:
    problem = build_problem(cluster(free, running, waiting), ALLOCATE)
    hint = greedy(problem)
    best = solve_exact(problem, hint, budget=20.0, clock=SearchClock(workers=1, wall=False)).assignment or hint
    # Nothing placed, the greedy's, the search's, and back: floors down, up and down again.
    _same_as_fresh(problem, [hint, best, Assignment(), hint, best])


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cases_decisions_bounded_on_the_shared_lp(name: str) -> None:
    problem = build_problem(CASES[name], ALLOCATE)
    hint = greedy(problem)
    best = solve_exact(problem, hint, budget=20.0, clock=SearchClock(workers=1, wall=False)).assignment or hint
    _same_as_fresh(problem, [Assignment(), hint, best, hint])
