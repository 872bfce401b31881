"""Repair the first fill's decision where small multi-pod gangs broke the nodes a queue below its
share needs whole: those gangs re-placed pod by pod, the wholly free nodes kept whole.

Why: the greedy tries a gang of several pods all on one node first (NVLink), on the fullest node
with room for the whole gang. On a saturated cluster that node is often one whose GPUs were all
free before the cycle, and such nodes are the only room for the pods that ask a whole node
(8-GPU pods). A queue below its deserved share that waits with those pods at a later fair-share
level then finds no node. The fourth fill (:func:`vcsat.solver.greedy.greedy_keeping_whole`) avoids
this, but it costs a whole fill and a loaded cycle that skips the second fill never reaches it.
This repair costs less: it takes out only the multi-pod gangs that sit on such a node, with their
pods smaller than the largest waiting pod of a queue below its share, and the gangs of the lowest
priority (which hold the holes on the nodes in use that those gangs can go to), and places every
gang the decision then leaves out as the greedy would (:mod:`vcsat.solver.search.top_up`), in a
room that keeps wholly free nodes whole: the gangs taken out go pod by pod into the GPUs left on
the nodes in use, and the waiting whole-node pods get the nodes they free.

The caller keeps the result only where it ranks higher than the decision it repairs
(:func:`vcsat.solver.solve.warm_start`). Where the top-up cannot account for the room exactly
(rules between pods, topology spread, shared CSI volumes, GPU shares), there is no repair.
"""

from __future__ import annotations

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import FillMemos, Room
from vcsat.solver.objectives.fairness import fair_ranks
from vcsat.solver.problem import Problem
from vcsat.solver.search.exchange import _exact, _raisable, without
from vcsat.solver.search.top_up import Filled, charged, top_up_in


def broken_whole(problem: Problem, assignment: Assignment) -> list[int]:
    """The placed gangs of two or more pods, all on one node whose GPUs were all free before the
    cycle and that had room for the largest waiting pod of a queue below its deserved share (at
    any fair-share tier), each pod smaller than that pod; none where no such queue waits with
    GPU pods."""
    if res.GPU not in problem.resources:
        return []
    gpu = problem.resource_index(res.GPU)
    largest = 0
    for tier in fair_ranks(problem):
        for _queue, _rank, _first, most in _raisable(problem, assignment, tier):
            largest = max(largest, most)
    if largest <= 0:
        return []
    node_of: dict[int, int] = {}
    pods: dict[int, int] = {}
    spread: set[int] = set()
    for (g, s, node), k in assignment.gang_slots.items():
        if k <= 0 or g in spread:
            continue
        if problem.shapes[s].request[gpu] >= largest or node_of.setdefault(g, node) != node:
            spread.add(g)
            continue
        pods[g] = pods.get(g, 0) + k
    out = []
    for g, node in node_of.items():
        if g in spread or pods.get(g, 0) < 2:
            continue
        total = problem.nodes[node].gpus
        if total > 0 and problem.free[node][gpu] >= max(total, largest):
            out.append(g)
    return sorted(out)


def repair_whole(problem: Problem, assignment: Assignment) -> Assignment | None:
    """``assignment`` without its :func:`broken_whole` gangs, then every gang it leaves out placed
    as the greedy would, in a room that keeps wholly free nodes whole (module docstring); None
    where there is nothing to repair or the room cannot be accounted for exactly."""
    if not assignment.placed or not _exact(problem, assignment):
        return None
    gangs = broken_whole(problem, assignment)
    if not gangs:
        return None
    # The lowest priority's gangs too: the holes they fill on the nodes in use are the room the
    # gangs taken out go to pod by pod; they come back in the fill's order, where room is left.
    lowest = min(gang.rank for gang in problem.candidates)
    gangs = sorted({*gangs, *(g for g in assignment.placed if problem.gangs[g].rank == lowest)})
    reduced = without(problem, assignment, gangs)
    if reduced is None:
        return None
    room = Room(problem, reduced.shape_slots, memos=FillMemos.of(problem))
    room.keep_whole = True
    caps, held = charged(problem, reduced)
    out, _ = top_up_in(problem, reduced, filled=Filled(room, caps, held))
    return out
