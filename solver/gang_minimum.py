"""Whether a gang's pods could reach its minimum at all, given at most how many pods of each shape
some room holds.

Why: a gang is all-or-nothing, so a relaxation that counts pods one by one (the LP bound's merged
columns, the eviction phase's choice of preemptors) would otherwise take part of a gang that can
never run. The room a caller passes counts each class alone on every node it may use, which
over-counts what the room holds together: a gang this rejects is placed by no decision.
"""

from __future__ import annotations

from collections.abc import Callable

from vcsat.solver.problem import Gang, Problem


def reaches_minimum(problem: Problem, gang: Gang, room: Callable[[int], int]) -> bool:
    """Whether ``gang``'s pods, each class at most ``room(shape)`` of them, reach its minimum and
    each task's (``minTaskMember``)."""
    placeable = {c: min(len(problem.classes[c].pods), room(problem.classes[c].shape)) for c in gang.classes}
    if sum(placeable.values()) < max(1, gang.need):
        return False
    return all(
        sum(k for c, k in placeable.items() if problem.classes[c].task == task) >= need
        for task, need in gang.task_need.items()
    )
