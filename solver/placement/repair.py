"""Make a relaxed decision exact by giving up the least valuable placements that do not fit.

When the decode cannot fit every pod of a bucket with its real request and no time is left to
refine the model, this removes, for each pod short, first an optional pod (beyond its gang's
minimum) and otherwise a whole gang, always the lowest ranked (lowest priority, then youngest).
The result is feasible by construction; the solver then reports FEASIBLE, never OPTIMAL.
"""

from __future__ import annotations

from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import gang_order
from vcsat.solver.placement.decode import Resolution, resolve
from vcsat.solver.problem import Bucket, Problem


def repair(problem: Problem, assignment: Assignment, buckets: list[Bucket]) -> tuple[Assignment, Resolution]:
    current = Assignment(
        placed=set(assignment.placed),
        count=dict(assignment.count),
        shape_slots=dict(assignment.shape_slots),
        bucket_slots=dict(assignment.bucket_slots),
    )
    resolution = resolve(problem, current, buckets)
    while resolution.short_shapes:
        for shape, short in sorted(resolution.short_shapes.items()):
            for _ in range(short):
                if not _drop_one(problem, current, shape):
                    break
        resolution = resolve(problem, current, buckets)
    return current, resolution


def _drop_one(problem: Problem, assignment: Assignment, shape: int) -> bool:
    holders = sorted(
        (
            problem.gangs[problem.classes[c].gang]
            for c, k in assignment.count.items()
            if k > 0 and problem.classes[c].shape == shape
        ),
        key=gang_order,
        reverse=True,
    )
    for gang in holders:
        placed = sum(assignment.count.get(c, 0) for c in gang.classes)
        for c in gang.classes:
            pod_class = problem.classes[c]
            if pod_class.shape != shape or assignment.count.get(c, 0) == 0:
                continue
            of_task = sum(assignment.count.get(o, 0) for o in gang.classes if problem.classes[o].task == pod_class.task)
            if placed - 1 >= max(1, gang.need) and of_task - 1 >= gang.task_need.get(pod_class.task, 0):
                assignment.count[c] -= 1
                return True
    if not holders:
        return False
    gang = holders[0]
    assignment.placed.discard(gang.index)
    for c in gang.classes:
        assignment.count.pop(c, None)
    return True
