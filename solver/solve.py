"""One scheduling cycle as a pure function: ``solve(snapshot, policy) -> Decision``.

The steps are design.md's: prefilter and aggregate (:mod:`problem`), greedy warm start
(:mod:`greedy`), an LP bound (:mod:`bound`), exact search (:mod:`exact`), decode into pods, nodes
and GPU indices (:mod:`decode`), and the reason for every PodGroup left waiting (:mod:`explain`).
The greedy decision stands (``FALLBACK``) when the search finds nothing at least as good in time.

``solver.objective`` is the placed work (dominant-share thousandths, summed over every priority);
``solver.bound`` sums, per priority level, the tighter of CP-SAT's bound and the LP's, each proven
with the more important levels held at the decision's values.
"""

from __future__ import annotations

import time

from vcsat.model import Decision, Policy, Snapshot, SolverStats
from vcsat.solver.assignment import Assignment
from vcsat.solver.bound import lp_level_bounds
from vcsat.solver.decode import bindings
from vcsat.solver.exact import solve_exact
from vcsat.solver.explain import outcomes
from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.fairness import queue_fair_share
from vcsat.solver.objectives.placement import level_name, placed_work
from vcsat.solver.problem import Problem, build_problem


def _placed(problem: Problem, assignment: Assignment) -> dict[int, int]:
    """Placed work per objective rank, the first objective levels."""
    return {rank: placed_work(problem, assignment, rank) for rank in {g.rank for g in problem.candidates}}


def _ranked(values: dict[int, int]) -> tuple[int, ...]:
    return tuple(values[rank] for rank in sorted(values, reverse=True))


def solve(snapshot: Snapshot, policy: Policy | None = None) -> Decision:
    policy = policy or Policy()
    started = time.monotonic()
    problem = build_problem(snapshot, policy)
    hint = greedy(problem)
    hint_values = _placed(problem, hint)
    first_bounds = lp_level_bounds(problem, hint_values, queue_fair_share(problem, hint))
    targets = {level_name(rank): bound for rank, bound in first_bounds.items()}
    result = solve_exact(problem, hint, started=started, targets=targets)

    if result.assignment is not None and _ranked(_placed(problem, result.assignment)) >= _ranked(hint_values):
        assignment, status = result.assignment, ("OPTIMAL" if result.optimal else "FEASIBLE")
    else:
        assignment, status = hint, "FALLBACK"
    values = _placed(problem, assignment)
    fair_share = queue_fair_share(problem, assignment)
    lp_bounds = first_bounds if assignment is hint else lp_level_bounds(problem, values, fair_share)
    bound = 0
    for rank, value in values.items():
        proven = [b for b in (lp_bounds.get(rank), result.bounds.get(level_name(rank))) if b is not None]
        bound += max(value, min(proven)) if proven else value
    objective = sum(values.values())
    if status == "FALLBACK" and bound == objective and not result.levels:
        status = "OPTIMAL"  # nothing to search: the greedy decision is the whole answer
    stats = SolverStats(
        status=status,
        objective=float(objective),
        bound=float(bound),
        seconds=round(time.monotonic() - started, 3),
    )
    return Decision(
        bindings=bindings(problem, assignment, assignment.shape_slots),
        podgroups=outcomes(problem, assignment),
        solver=stats,
    )
