"""Node preferences: place each pod where kube-scheduler's NodeAffinity and TaintToleration scores
put it highest (:mod:`vcsat.solver.rules.preferences`).

One level, ranked below placed work, fairness, DRF and locality (a preference never costs a placed
pod or a fair share) and above packing: what a user asked for comes before vcsat's own tidiness.
The bucket of a slot holds pods of one preference key, so ``score × slot`` is exact. No pending pod
with a preference, no level: the default workloads pay nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Problem
from vcsat.solver.search.levels import Level, make_level
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

LEVEL_NAME = "preferred nodes (node affinity, PreferNoSchedule taints)"


def preference_levels(problem: Problem, v: Variables) -> list[Level]:
    if not problem.preferring:
        return []
    terms: list[tuple[cp_model.IntVar, int]] = []
    for node, node_terms in sorted(v.on_node.items()):
        for term in node_terms:
            score = problem.preference(term.bucket, node)
            if score > 0:
                terms.append((term.var, score))
    return [make_level(LEVEL_NAME, terms, upper_of=v.upper, measure=preferred_score)]


def preferred_score(problem: Problem, assignment: Assignment) -> int:
    """The level's value: each placed pod's preference score on its node, summed."""
    return sum(k * problem.shapes[s].preference.get(node, 0) for (s, node), k in assignment.shape_slots.items())
