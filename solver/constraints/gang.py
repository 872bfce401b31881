"""Gang scheduling: a gang places at least minMember (and each minTaskMember) or nothing at all.

Pods beyond minMember are optional (an elastic job may start with its minimum), but only once the
gang itself is placed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsat.solver.problem import Problem
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def add_gang(cp: cp_model.CpModel, problem: Problem, v: Variables) -> None:
    for gang in problem.candidates:
        placed = v.placed[gang.index]
        counts = [v.count[c] for c in gang.classes if c in v.count]
        for c in gang.classes:
            if c in v.count:
                cp.add(v.count[c] <= len(problem.classes[c].pods) * placed)
        if not counts:
            cp.add(placed == 0)
            continue
        cp.add(sum(counts) >= max(1, gang.need) * placed)
        for task, need in gang.task_need.items():
            of_task = [v.count[c] for c in gang.classes if c in v.count and problem.classes[c].task == task]
            if not of_task:
                cp.add(placed == 0)
            else:
                cp.add(sum(of_task) >= need * placed)
