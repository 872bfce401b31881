"""One scheduling cycle as a pure function: ``solve(snapshot, policy) -> Decision``.

The steps are design.md's: prefilter and aggregate (:mod:`problem`), greedy warm start
(:mod:`greedy`), exact search (:mod:`exact`), decode into pods, nodes and GPU indices
(:mod:`decode`), and the reason for every PodGroup left waiting (:mod:`explain`). The greedy
decision stands (``FALLBACK``) when the search finds nothing at least as good in time.
"""

from __future__ import annotations

import time

from vcsat.model import Decision, Policy, Snapshot, SolverStats
from vcsat.solver.assignment import Assignment
from vcsat.solver.decode import bindings
from vcsat.solver.exact import solve_exact
from vcsat.solver.explain import outcomes
from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.placement import placed_work
from vcsat.solver.problem import Problem, build_problem


def _ranked(problem: Problem, assignment: Assignment) -> tuple[int, ...]:
    """Placed work per priority, highest priority first: the first objective levels, in order."""
    priorities = sorted({gang.priority for gang in problem.gangs}, reverse=True)
    return tuple(placed_work(problem, assignment, p) for p in priorities)


def solve(snapshot: Snapshot, policy: Policy | None = None) -> Decision:
    policy = policy or Policy()
    started = time.monotonic()
    problem = build_problem(snapshot, policy)
    hint = greedy(problem)
    result = solve_exact(problem, hint, started=started)

    if result.assignment is None or _ranked(problem, result.assignment) < _ranked(problem, hint):
        assignment = hint
        stats = SolverStats(status="FALLBACK", objective=float(sum(_ranked(problem, hint))), bound=0.0)
    else:
        assignment = result.assignment
        stats = SolverStats(
            status="OPTIMAL" if result.optimal else "FEASIBLE",
            objective=result.objective,
            bound=result.bound,
        )
    decision = Decision(
        bindings=bindings(problem, assignment, assignment.shape_slots),
        podgroups=outcomes(problem, assignment),
        solver=stats.model_copy(update={"seconds": round(time.monotonic() - started, 3)}),
    )
    return decision
