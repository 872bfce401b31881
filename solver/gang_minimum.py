"""Whether a gang's pods could reach its minimum at all, given at most how many pods of each shape
some room holds.

Why: a gang is all-or-nothing, so a relaxation that counts pods one by one (the LP bound's merged
columns, the eviction phase's choice of preemptors) would otherwise take part of a gang that can
never run. The room a caller passes counts each class alone on every node it may use, which
over-counts what the room holds together: a gang this rejects is placed by no decision.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import NDArray

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


def reaches_minimum_somewhere(problem: Problem, gang: Gang, rooms: Mapping[int, NDArray[np.int64]]) -> bool:
    """:func:`reaches_minimum` in each of several rooms at once (a gang that must stay within one
    of them): ``rooms[shape][d]`` pods of that shape at most in room ``d`` (none past the array's
    end); whether some room lets the gang reach its minimum and each task's."""
    size = max((len(room) for room in rooms.values()), default=0)
    if size == 0:
        return False
    total = np.zeros(size, dtype=np.int64)
    by_task: dict[str, NDArray[np.int64]] = {}
    for c in gang.classes:
        pod_class = problem.classes[c]
        room = np.zeros(size, dtype=np.int64)
        held = rooms[pod_class.shape]
        room[: len(held)] = held
        placeable = np.minimum(room, len(pod_class.pods))
        total += placeable
        if gang.task_need:
            by_task[pod_class.task] = by_task.get(pod_class.task, np.zeros(size, dtype=np.int64)) + placeable
    reached = total >= max(1, gang.need)
    for task, need in gang.task_need.items():
        reached &= by_task.get(task, np.zeros(size, dtype=np.int64)) >= need
    return bool(reached.any())
