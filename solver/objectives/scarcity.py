"""Scarce GPU pools kept for the pods confined to them (:mod:`vcsat.solver.pricing.scarcity`).

One level, ranked below placed work, fairness, DRF, locality and every user preference (node
affinity scores, soft spread, inter-pod preferences) and above packing and age: a lexicographic
level, not a weight, so no amount of it ever trades away one pod of placed work or a fair share; it
only decides, among decisions that place the same work, which pool's room the unconfined pods take.
Each slot costs its pods' GPU thousandths times the node's rate (its pool's pressure, 0 for pods
confined to that pool, counted with the prices of a rare node type's last free nodes,
:mod:`vcsat.solver.pricing.rarity`, and of the last nodes a size class seen fits,
:mod:`vcsat.solver.pricing.size_classes`), rounded to whole thousandths; the coefficient depends only on a
bucket's GPU request and predicates, which all its shapes share, so the level's value is exact per
shape. CPU-only pods are priced here only on a GPU node when they may run on a node without GPUs
(the whole GPU room they strand, :attr:`vcsat.solver.pricing.scarcity.Scarcity.plain`), at the
node's room when the cycle starts and the least any shape of the bucket strands (what they strand
depends on the cpu and memory a bucket's shapes differ in; :func:`kept` counts each pod's own), and
not on a pool's pressure: the greedy warm start and the decode price those
(:func:`vcsat.solver.pricing.scarcity.price`).
No confined pod and no node without GPUs, no level: homogeneous clusters pay nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from vcsat.solver.assignment import Assignment
from vcsat.solver.pricing import scarcity
from vcsat.solver.problem import Problem, Shape
from vcsat.solver.search.levels import Level, make_level
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

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


def costs(problem: Problem, scarce: scarcity.Scarcity, shape: Shape) -> NDArray[np.int64]:
    """:func:`cost` of one pod of ``shape`` on every node, as one array (the same numbers: the rates
    are the same floats, and numpy rounds halves to even as Python does), made once per problem."""
    global _costs
    if _costs is None or _costs[0] is not problem:
        _costs = (problem, {})
    made = _costs[1].get(shape.index)
    if made is not None:
        return made
    milli = scarcity.shape_milli(problem, shape)
    if milli > 0:
        out = np.rint(scarce.rates(shape.eligibility) * milli).astype(np.int64)
    elif not scarce.plain:
        out = np.zeros(len(problem.nodes), dtype=np.int64)
    else:
        rate = scarce.rates(shape.eligibility, gpu=False)
        out = np.zeros(len(problem.nodes), dtype=np.int64)
        priced = np.flatnonzero(rate > 0)
        if len(priced):
            free = np.array(problem.free, dtype=np.int64).reshape(len(problem.nodes), -1)[priced]
            fraction = np.zeros(len(priced), dtype=np.float64)
            for r in (scarce.cpu, scarce.memory):
                if r is None or shape.request[r] <= 0:
                    continue
                room = free[:, r]
                share = np.where(room <= 0, 1.0, np.minimum(1.0, shape.request[r] / np.where(room <= 0, 1, room)))
                fraction = np.maximum(fraction, share)
            gpu_room = np.array([scarcity.node_gpu_room(problem, int(n)) for n in priced], dtype=np.int64)
            taken = np.maximum(0, np.rint(gpu_room * fraction).astype(np.int64))
            out[priced] = np.rint(rate[priced] * taken).astype(np.int64)
    _costs[1][shape.index] = out
    return out


_costs: tuple[Problem, dict[int, NDArray[np.int64]]] | None = None


def scarcity_levels(problem: Problem, v: Variables) -> list[Level]:
    scarce = scarcity.for_problem(problem)
    if scarce is None:
        return []
    lowest: dict[tuple[int, ...], list[int]] = {}
    terms: list[tuple[cp_model.IntVar, int]] = []
    for node, node_terms in sorted(v.on_node.items()):
        for term in node_terms:
            prices = lowest.get(term.bucket.shapes)
            if prices is None:
                arrays = [costs(problem, scarce, problem.shapes[s]) for s in term.bucket.shapes]
                prices = (arrays[0] if len(arrays) == 1 else np.minimum.reduce(arrays)).tolist()
                lowest[term.bucket.shapes] = prices
            price = prices[node]
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
    return -sum(
        k * int(costs(problem, scarce, problem.shapes[s])[node]) for (s, node), k in assignment.shape_slots.items()
    )
