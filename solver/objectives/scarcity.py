"""Scarce GPU pools kept for the pods confined to them (:mod:`vcsat.solver.pricing.scarcity`).

One level, ranked below placed work, fairness, DRF, locality and every user preference (node
affinity scores, soft spread, inter-pod preferences) and above packing and age: a lexicographic
level, not a weight, so no amount of it ever trades away one pod of placed work or a fair share; it
only decides, among decisions that place the same work, which pool's room the unconfined pods take.
Each slot costs its pods' GPU thousandths times the node pool's pressure (0 for pods confined to
that pool), rounded to whole thousandths; the coefficient depends only on a bucket's GPU request
and predicates, which all its shapes share, so the level's value is exact per shape. CPU-only pods
are priced here only on a GPU node when they may run on a node without GPUs (the whole GPU room
they strand, :attr:`vcsat.solver.pricing.scarcity.Scarcity.plain`), at the node's room when the cycle
starts and the least any shape of the bucket strands (what they strand depends on the cpu and
memory a bucket's shapes differ in; :func:`kept` counts each pod's own), and not on a pool's
pressure: the greedy warm start and the decode price those (:func:`vcsat.solver.pricing.scarcity.price`).
No confined pod and no node without GPUs, no level: homogeneous clusters pay nothing.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from vcsat.solver.assignment import Assignment
from vcsat.solver.pricing import scarcity
from vcsat.solver.problem import Problem, Shape
from vcsat.solver.search.levels import Level, make_level
from vcsat.solver.search.variables import Variables

LEVEL_NAME = "scarce GPU pools kept for their confined pods"


def cost(problem: Problem, scarce: scarcity.Scarcity, shape: Shape, node: int) -> int:
    """One pod of ``shape`` on ``node``: the level's (positive) cost in whole GPU thousandths."""
    milli = scarcity.shape_milli(problem, shape)
    if milli > 0:
        return round(scarce.rate(node, shape.eligibility) * milli)
    if not scarce.plain or scarce.rate(node, shape.eligibility, gpu=False) <= 0:
        return 0  # on a pool, a CPU-only pod is priced by the greedy and the decode only (see above)
    free = problem.free[node]
    cpu = (shape.request[scarce.cpu], free[scarce.cpu]) if scarce.cpu is not None else (0, 0)
    memory = (shape.request[scarce.memory], free[scarce.memory]) if scarce.memory is not None else (0, 0)
    room = scarcity.node_gpu_room(problem, node)
    return round(scarcity.price(scarce, node, shape.eligibility, 0, room, cpu, memory))


def scarcity_levels(problem: Problem, v: Variables) -> list[Level]:
    scarce = scarcity.for_problem(problem)
    if scarce is None:
        return []
    terms: list[tuple[cp_model.IntVar, int]] = []
    for node, node_terms in sorted(v.on_node.items()):
        for term in node_terms:
            price = min(cost(problem, scarce, problem.shapes[s], node) for s in term.bucket.shapes)
            if price > 0:
                terms.append((term.var, -price))
    if not terms:
        return []
    return [make_level(LEVEL_NAME, terms, upper_of=v.upper, measure=kept)]


def kept(problem: Problem, assignment: Assignment) -> int:
    """The level's value: minus each placed pod's cost on its node, summed."""
    scarce = scarcity.for_problem(problem)
    if scarce is None:
        return 0
    return -sum(k * cost(problem, scarce, problem.shapes[s], node) for (s, node), k in assignment.shape_slots.items())
