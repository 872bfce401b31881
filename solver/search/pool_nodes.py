"""The nodes a neighbourhood frees to move work between GPU pools, for a fair-share tier that waits.

On contended clusters a queue below its deserved share at a fair-share tier waits with GPU pods
confined to some GPU models (its **pool**), while the pool's nodes are held by work that could
run on other models as well. A long search raises the tier by moving that flexible work off the
pool into the other models' nodes and placing the waiting pods on what it frees: a move over
nodes that have no room left unused, which the neighbourhood of the incumbent's holes
(:func:`vcsat.solver.search.neighbourhood.free_nodes`) never frees.

So, for the most important tier with a queue below its share waiting with GPU pods it counts:

- the **pool** nodes that would leave the most GPUs once the work on them that may also run off
  the pool goes (what is free there counted too), at most :data:`POOL_NODES`;
- the **reach**: the nodes off the pool that such work may use, those with the most GPUs left
  unused first, at most :data:`REACH_NODES`.

Everything here reads shapes and slots only: which gangs fill the slots stays open in the
neighbourhood's model, so moving one queue's pod off the pool and another's onto it is a change
of two nodes' slots.
"""

from __future__ import annotations

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import fair_ranks, fair_terms, placed_amount
from vcsat.solver.problem import Problem
from vcsat.solver.search.chain import waiting_counted

POOL_NODES = 32
"""At most this many pool nodes are freed: enough for a few waiting gangs' pods and the work they
displace, few enough that the model stays small."""
REACH_NODES = 32
"""At most this many nodes off the pool are freed, for the work moved off it."""


def waiting_pool(problem: Problem, assignment: Assignment) -> frozenset[int]:
    """The nodes the waiting GPU pods of the most important fair-share tier with a queue below its
    deserved share (and such a pod waiting) may use; empty when there is no such tier."""
    gpu = problem.resource_index(res.GPU)
    for tier in fair_ranks(problem):
        pool: set[int] = set()
        for queue, name, deserved, held, asked in fair_terms(problem, tier):
            if name != res.GPU or held + placed_amount(problem, assignment, asked, gpu) >= deserved:
                continue
            counted = set(asked)
            for gang in waiting_counted(problem, assignment, queue, counted):
                for c in gang.classes:
                    shape = problem.shapes[problem.classes[c].shape]
                    if c in counted and problem.classes[c].pods and shape.request[gpu] > 0:
                        pool.update(shape.nodes)
        if pool:
            return frozenset(pool)
    return frozenset()


def pool_nodes(problem: Problem, assignment: Assignment) -> frozenset[int]:
    """The pool and reach nodes (module docstring) of ``assignment``; none on a cluster without
    GPUs or where no tier waits with GPU pods."""
    if res.GPU not in problem.resources:
        return frozenset()
    pool = waiting_pool(problem, assignment)
    if not pool:
        return frozenset()
    gpu = problem.resource_index(res.GPU)
    left = [row[gpu] for row in problem.free]
    room = {node: 0 for node in pool}
    reach: set[int] = set()
    for (s, node), k in assignment.shape_slots.items():
        if k <= 0:
            continue
        shape = problem.shapes[s]
        left[node] -= k * shape.request[gpu]
        if node in pool and shape.request[gpu] > 0:
            off = [n for n in shape.nodes if n not in pool]
            if off:
                room[node] += k * shape.request[gpu]
                reach.update(off)
    for node in pool:
        room[node] += left[node]
    chosen = sorted((n for n in pool if room[n] > 0), key=lambda n: (-room[n], n))[:POOL_NODES]
    if not chosen:
        return frozenset()
    away = sorted((n for n in reach if left[n] > 0), key=lambda n: (-left[n], n))[:REACH_NODES]
    return frozenset(chosen) | frozenset(away)
