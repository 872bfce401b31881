"""Lexicographic objectives for CP-SAT: ranked levels, merged by weights where exact, staged where not.

Volcano decides in a fixed order of concerns (priority before fairness before packing); an exact
solver must keep that order, not trade a high-priority gang for many small packing wins. Each
concern is a :class:`Level` (a linear expression to maximise, with its range). Consecutive levels
are merged into one weighted objective while the weights stay exact (below 2**53); when they would
not, the next level starts a new *stage*: solve, then fix the stage's value and go on. Each level's
name says which concern it is, so an outcome can be traced to the term that decided it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

    from vcsat.solver.assignment import Assignment
    from vcsat.solver.problem import Problem

Measure = Callable[["Problem", "Assignment"], int]
"""The level's value computed from a decided assignment, without the solver."""

EXACT_LIMIT = 2**53


@dataclass(frozen=True)
class Level:
    name: str
    terms: tuple[tuple[cp_model.IntVar, int], ...]
    """(variable, coefficient) pairs of the expression to maximise."""
    lower: int
    upper: int
    """Bounds of the expression over the variables' domains."""
    measure: Measure
    reported: bool = False
    """Whether the level counts in the decision's ``solver.objective`` and ``bound`` (placed work)."""

    @property
    def span(self) -> int:
        return self.upper - self.lower + 1


def make_level(
    name: str,
    terms: list[tuple[cp_model.IntVar, int]],
    *,
    upper_of: dict[int, int],
    measure: Measure,
    reported: bool = False,
) -> Level:
    """A level over variables whose domains are ``[0, upper_of[var.index]]``."""
    lower = 0
    upper = 0
    for var, coef in terms:
        lo, hi = 0, upper_of[var.index]
        if coef >= 0:
            lower += coef * lo
            upper += coef * hi
        else:
            lower += coef * hi
            upper += coef * lo
    return Level(name=name, terms=tuple(terms), lower=lower, upper=upper, measure=measure, reported=reported)


@dataclass(frozen=True)
class Stage:
    """Levels solved together as one weighted objective; the first level weighs the most."""

    levels: tuple[Level, ...]
    weights: tuple[int, ...]

    def expression(self) -> cp_model.LinearExprT:
        from ortools.sat.python import cp_model

        variables = [var for level in self.levels for var, _ in level.terms]
        coefs = [
            weight * coef for level, weight in zip(self.levels, self.weights, strict=True) for _, coef in level.terms
        ]
        return cp_model.LinearExpr.weighted_sum(variables, coefs)

    def value(self, problem: Problem, assignment: Assignment) -> int:
        """The stage's objective for a decided assignment, as CP-SAT would count it."""
        return sum(
            weight * level.measure(problem, assignment) for level, weight in zip(self.levels, self.weights, strict=True)
        )

    def level_bounds(self, values: list[int], bound: int) -> list[int]:
        """Per level, an upper bound proven by the stage's bound, given the levels above it as found.

        CP-SAT bounds the weighted sum; read level by level it bounds each level with the more
        important ones held at their found values, which is what a lexicographic optimum means.
        """
        out: list[int] = []
        prefix = 0
        for i, (level, weight) in enumerate(zip(self.levels, self.weights, strict=True)):
            rest = sum(w * lv.lower for lv, w in zip(self.levels[i + 1 :], self.weights[i + 1 :], strict=True))
            out.append(max(values[i], min(level.upper, (bound - prefix - rest) // weight)))
            prefix += weight * values[i]
        return out

    @property
    def names(self) -> str:
        return " > ".join(level.name for level in self.levels)


def plan_stages(levels: list[Level]) -> list[Stage]:
    """Group levels, most important first, into as few exactly-weighted stages as fit, placed work
    (reported levels) never in one stage with the levels above it."""
    stages: list[Stage] = []
    group: list[Level] = []
    product = 1
    for level in levels:
        if not level.terms:
            continue
        # A stage's weighted bound says little of the levels below its first: placed work (the
        # reported levels) starts a stage of its own, so its bound and gap are its own.
        if group and (product * level.span >= EXACT_LIMIT or (level.reported and not group[-1].reported)):
            stages.append(_weighted(group))
            group, product = [], 1
        group.append(level)
        product *= level.span
    if group:
        stages.append(_weighted(group))
    return stages


def _weighted(group: list[Level]) -> Stage:
    weights: list[int] = []
    weight = 1
    for level in reversed(group):
        weights.append(weight)
        weight *= level.span
    return Stage(levels=tuple(group), weights=tuple(reversed(weights)))
