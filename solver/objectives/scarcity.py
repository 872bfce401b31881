"""Scarce GPU pools kept for the pods confined to them (:mod:`vcsat.solver.scarcity`).

One level, ranked below placed work, fairness, DRF, locality and every user preference (node
affinity scores, soft spread, inter-pod preferences) and above packing and age: a lexicographic
level, not a weight, so no amount of it ever trades away one pod of placed work or a fair share; it
only decides, among decisions that place the same work, which pool's room the unconfined pods take.
Each slot costs its pods' GPU thousandths times the node pool's pressure (0 for pods confined to
that pool), rounded to whole thousandths; the coefficient depends only on a bucket's GPU request
and predicates, which all its shapes share, so the level's value is exact per shape. CPU-only pods
are not priced here (what they strand depends on the cpu and memory a bucket's shapes differ in);
the greedy warm start and the decode price them (:func:`vcsat.solver.scarcity.price`). No confined
pod, no level: homogeneous clusters pay nothing.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.solver import scarcity
from vcsat.solver.assignment import Assignment
from vcsat.solver.levels import Level, make_level
from vcsat.solver.problem import Problem, Shape
from vcsat.solver.variables import Variables

LEVEL_NAME = "scarce GPU pools kept for their confined pods"


def shape_gpu_milli(problem: Problem, shape: Shape) -> int:
    """GPU thousandths one pod of ``shape`` takes: whole GPUs × 1000 plus its share."""
    if res.GPU_MILLI in problem.resources:
        return shape.request[problem.resource_index(res.GPU_MILLI)]
    return shape.gpus * FULL_GPU_MILLI


def cost(problem: Problem, scarce: scarcity.Scarcity, shape: Shape, node: int) -> int:
    """One pod of ``shape`` on ``node``: the level's (positive) cost in whole GPU thousandths."""
    milli = shape_gpu_milli(problem, shape)
    if milli <= 0:
        return 0
    return round(scarce.rate(node, shape.eligibility) * milli)


def scarcity_levels(problem: Problem, v: Variables) -> list[Level]:
    scarce = scarcity.for_problem(problem)
    if scarce is None:
        return []
    terms: list[tuple[cp_model.IntVar, int]] = []
    for node, node_terms in sorted(v.on_node.items()):
        for term in node_terms:
            price = cost(problem, scarce, problem.shapes[term.bucket.shapes[0]], node)
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
