"""Queue capability: a queue's pods never hold more than its ``capability`` (contract §3), and a
parent queue's capability caps its whole subtree.

Amounts enter CP-SAT divided exactly by their resource's common divisor (:mod:`vcsat.solver.units`).
Closed queues never reach the model: the prefilter blocks their gangs with ``QueueClosed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsat.solver.problem import Problem
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def add_quota(cp: cp_model.CpModel, problem: Problem, v: Variables) -> None:
    for queue, room in sorted(problem.queue_room.items()):
        classes = [c for c in v.count if queue in problem.lineage(problem.gangs[problem.classes[c].gang].queue)]
        if not classes:
            continue
        for name, left in sorted(room.items()):
            if name not in problem.resources:
                continue
            r = problem.resource_index(name)
            units = problem.units
            terms = [
                (v.count[c], units.request(r, problem.shapes[problem.classes[c].shape].request[r]))
                for c in classes
                if problem.shapes[problem.classes[c].shape].request[r] > 0
            ]
            if terms:
                cp.add(sum(coef * var for var, coef in terms) <= units.room(r, max(0, left)))
