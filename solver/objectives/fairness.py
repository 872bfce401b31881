"""Fair sharing: queues towards their deserved shares, then DRF among a queue's elastic jobs.

Queue fair share is the first objective level (Volcano's proportion plugin orders queues before
jobs): maximise, over queues, the part of each queue's allocation that lies within its deserved
share (:mod:`vcsat.solver.fairness.deserved`) on its dominant deserved resource, in thousandths of
the cluster. Room a
queue cannot use earns it nothing, and work beyond a share is still rewarded by the placed-work
levels below, so idle room is lent and the whole stays work-conserving.

DRF ranks below placed work of the same priority: among the decisions that place the most work,
it prefers the one whose elastic jobs (those with pods beyond their gang minimum) have the most
equal dominant shares, by a concave (piecewise-linear) utility of each job's dominant share. A job
that is all-or-nothing has no share to balance; it is left to the levels above. Max-work first is
our choice: DRF here never places less work than it could, where Volcano's progressive filling may.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.levels import Level, make_level
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.variables import Variables

SHARE_SCALE = 1000
"""Shares in thousandths of the cluster."""
DRF_PIECES = 4
"""Pieces of the concave DRF utility: slopes 4, 3, 2, 1 between quarters of the cluster."""
EXCLUDED = frozenset({res.PODS, res.GPU_MILLI, res.EPHEMERAL_STORAGE})


def _fair_resources(problem: Problem, queue: str) -> list[str]:
    """The queue's dominant deserved resource: the one of which it deserves the largest part of
    the cluster (GPUs, on a GPU cluster). Shares are judged there, as Volcano orders queues by
    their dominant share; counting every resource would ask each queue to match the cluster's
    cpu:memory:GPU ratio, which no real workload does."""
    deserved = problem.deserved.get(queue, {})
    candidates = [
        name
        for name in problem.resources
        if name not in EXCLUDED and problem.total.get(name, 0) > 0 and deserved.get(name, 0) > 0
    ]
    if not candidates:
        return []
    return [max(candidates, key=lambda name: (deserved[name] / problem.total[name], name))]


def _cap(problem: Problem, queue: str, name: str) -> int:
    return SHARE_SCALE * problem.deserved[queue][name] // problem.total[name]


def fair_terms(problem: Problem) -> list[tuple[str, str, int, int, list[int]]]:
    """(queue, resource, cap, held, asking classes) for every queue share the level can still grow.

    The model's variables and the measure of a decided assignment both come from this list, so
    the two always agree."""
    by_queue: dict[str, list[int]] = {}
    for gang in problem.candidates:
        for c in gang.classes:
            if problem.shapes[problem.classes[c].shape].nodes:
                by_queue.setdefault(gang.queue, []).append(c)
    out: list[tuple[str, str, int, int, list[int]]] = []
    for queue, classes in sorted(by_queue.items()):
        if queue not in problem.deserved:
            continue
        for name in _fair_resources(problem, queue):
            r = problem.resource_index(name)
            cap = _cap(problem, queue, name)
            held = problem.queue_usage.get(queue, {}).get(name, 0)
            if SHARE_SCALE * held >= cap * problem.total[name]:
                continue  # already at its share on this resource: nothing to gain here
            asked = [c for c in classes if problem.shapes[problem.classes[c].shape].request[r] > 0]
            if asked:
                out.append((queue, name, cap, held, asked))
    return out


def fairness_levels(cp: cp_model.CpModel, problem: Problem, v: Variables, hint: Assignment) -> list[Level]:
    """The queue level; its variables are hinted from ``hint``'s placements."""
    if not problem.deserved:
        return []
    terms: list[tuple[cp_model.IntVar, int]] = []
    for queue, name, cap, held, asked in fair_terms(problem):
        r = problem.resource_index(name)
        within = cp.new_int_var(0, cap, f"fair[{queue},{name}]")
        v.upper[within.index] = cap
        allocation = cp_model.LinearExpr.weighted_sum(
            [v.count[c] for c in asked],
            [SHARE_SCALE * problem.shapes[problem.classes[c].shape].request[r] for c in asked],
        )
        cp.add(problem.total[name] * within <= SHARE_SCALE * held + allocation)
        cp.add_hint(within, _within(problem, name, cap, held, asked, hint))
        terms.append((within, 1))
    return [make_level("queue fair share", terms, upper_of=v.upper, measure=queue_fair_share)]


def queue_fair_share(problem: Problem, assignment: Assignment) -> int:
    """The queue level's value for a decided assignment (what the model's variables would hold)."""
    return sum(
        _within(problem, name, cap, held, asked, assignment)
        for _queue, name, cap, held, asked in fair_terms(problem)
    )


def _within(
    problem: Problem, name: str, cap: int, held: int, asked: list[int], assignment: Assignment
) -> int:
    r = problem.resource_index(name)
    added = sum(
        assignment.count.get(c, 0) * problem.shapes[problem.classes[c].shape].request[r] for c in asked
    )
    return min(cap, SHARE_SCALE * (held + added) // problem.total[name])


def elastic(gang: Gang, problem: Problem) -> bool:
    return sum(len(problem.classes[c].pods) for c in gang.classes) > max(1, gang.need)
