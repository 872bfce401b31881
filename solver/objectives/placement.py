"""Placed work, ranked by priority: the first objective levels.

One level per priority value among the candidate gangs, highest first: no amount of lower-priority
work outweighs one more pod of higher priority (Volcano's priority plugin, made exact). Within a
level, work is measured as dominant share (:func:`vcsat.solver.problem.pod_value`), so the solver
places the most of the scarce resource rather than the most pods.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Problem
from vcsat.solver.search.levels import Level, make_level
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def placed_work(problem: Problem, assignment: Assignment, priority: int) -> int:
    return sum(
        k * problem.classes[c].value
        for c, k in assignment.count.items()
        if problem.gangs[problem.classes[c].gang].rank == priority
    )


def level_name(priority: int) -> str:
    return f"placed work at priority {priority}"


def placement_levels(problem: Problem, v: Variables) -> list[Level]:
    by_priority: dict[int, list[tuple[cp_model.IntVar, int]]] = {}
    for c, var in sorted(v.count.items()):
        pod_class = problem.classes[c]
        priority = problem.gangs[pod_class.gang].rank
        by_priority.setdefault(priority, []).append((var, pod_class.value))
    return [
        make_level(
            level_name(priority),
            terms,
            upper_of=v.upper,
            measure=partial(placed_work, priority=priority),
            reported=True,
        )
        for priority, terms in sorted(by_priority.items(), reverse=True)
    ]


def _age_weights(problem: Problem) -> dict[int, int]:
    """Per candidate gang, a weight that is larger the older it is (FIFO, as Volcano orders jobs)."""
    order = sorted(problem.candidates, key=lambda gang: (gang.created, gang.key))
    return {gang.index: len(order) - rank for rank, gang in enumerate(order)}


def age_level(problem: Problem, v: Variables) -> Level:
    """The last tie-break: among otherwise equal decisions, older gangs first."""
    weights = _age_weights(problem)
    terms = [(v.placed[g], weights[g]) for g in sorted(v.placed)]
    return make_level("older gangs first", terms, upper_of=v.upper, measure=_measure_age)


def _measure_age(problem: Problem, assignment: Assignment) -> int:
    weights = _age_weights(problem)
    return sum(weights[g] for g in assignment.placed if g in weights)
