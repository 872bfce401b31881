"""A second proof of optimality: an aggregate LP relaxation of placed work, solved by GLOP.

CP-SAT's own bound needs its linear relaxation and cuts, which on a thousand nodes come only after
presolve and a root search that may not fit in a short cycle. This LP forgets which node holds
which pod and keeps only what must hold in any decision:

- per set of eligible nodes, the pods that can only go there fit in those nodes' free room, on
  every resource;
- per GPU size ``g``, pods needing at least ``g`` GPUs are no more than the ``g``-GPU holes the
  nodes have (fragmentation: four free GPUs spread over four nodes take no 4-GPU pod);
- queue capabilities;
- the more important priority levels keep at least what the decision gave them.

Every decision is feasible for it, so its optimum bounds each placed-work level from above. It is
usually tight on GPU clusters, where whole GPUs are the scarce resource, and it costs milliseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from ortools.linear_solver import pywraplp

from vcsat.model import resources as res
from vcsat.solver.objectives.fairness import SHARE_SCALE, fair_terms, tier_threshold, utility_pieces
from vcsat.solver.problem import Problem

TOLERANCE = 1e-6
"""Relative slack added to the LP optimum, so floating point never makes the bound too small."""


@dataclass(frozen=True)
class _Item:
    """Pods that are alike for the LP: same priority, value, request and nodes (one column)."""

    priority: int
    value: int
    pods: int
    request: tuple[int, ...]
    gpus: int
    nodes: NDArray[np.bool_]
    queue: str


def lp_level_bounds(problem: Problem, found: dict[int, int], fair: dict[int, int] | None = None) -> dict[int, int]:
    """Per priority (highest first), an upper bound on placed work at that priority, given that
    every higher priority keeps at least ``found[priority]`` and, when given, each queue fair-share
    level (ranked above every priority) at least ``fair[rank]``."""
    items = _items(problem)
    if not items:
        return {}
    priorities = sorted({item.priority for item in items}, reverse=True)
    out: dict[int, int] = {}
    for number, priority in enumerate(priorities):
        floors = {p: found.get(p, 0) for p in priorities[:number]}
        out[priority] = _solve(problem, items, priority, floors, fair)
    return out


def _items(problem: Problem) -> list[_Item]:
    count = len(problem.nodes)
    pods: dict[tuple[int, int, int, str], int] = {}
    for gang in problem.candidates:
        for c in gang.classes:
            pod_class = problem.classes[c]
            if problem.shapes[pod_class.shape].nodes:
                key = (gang.rank, pod_class.value, pod_class.shape, gang.queue)
                pods[key] = pods.get(key, 0) + len(pod_class.pods)
    items: list[_Item] = []
    for (priority, value, s, queue), n in sorted(pods.items()):
        shape = problem.shapes[s]
        mask = np.zeros(count, dtype=np.bool_)
        mask[list(shape.nodes)] = True
        items.append(_Item(priority, value, n, shape.request, shape.gpus, mask, queue))
    return items


def _solve(
    problem: Problem, items: list[_Item], priority: int, floors: dict[int, int], fair: dict[int, int] | None
) -> int:
    lp = pywraplp.Solver.CreateSolver("GLOP")
    infinity = lp.infinity()
    y = [lp.NumVar(0, item.pods, f"y{i}") for i, item in enumerate(items)]
    free = np.maximum(np.array(problem.free, dtype=np.int64).reshape(len(problem.nodes), -1), 0)
    gpu = problem.resource_index(res.GPU) if res.GPU in problem.resources else None

    def add(indices: list[int], coefs: list[float], upper: float, lower: float = -1.0) -> None:
        if not indices:
            return
        row = lp.Constraint(-infinity if lower < 0 else lower, upper)
        for i, coef in zip(indices, coefs, strict=True):
            row.SetCoefficient(y[i], coef)

    # Room: per distinct node set, the items confined to it fit in its free room.
    by_set: dict[bytes, list[int]] = {}
    masks: dict[bytes, NDArray[np.bool_]] = {}
    for i, item in enumerate(items):
        key = item.nodes.tobytes()
        by_set.setdefault(key, []).append(i)
        masks[key] = item.nodes
    for mask in masks.values():
        inside = [i for other, members in by_set.items() if not np.any(masks[other] & ~mask) for i in members]
        room = free[mask].sum(axis=0)
        for r in range(len(problem.resources)):
            asked = [i for i in inside if items[i].request[r] > 0]
            add(asked, [float(items[i].request[r]) for i in asked], float(room[r]))
        # Holes: pods of at least g GPUs each need a node with g free GPUs.
        if gpu is not None:
            for g in sorted({items[i].gpus for i in inside if items[i].gpus > 1}):
                big = [i for i in inside if items[i].gpus >= g]
                add(big, [1.0] * len(big), float((free[mask][:, gpu] // g).sum()))

    for queue, caps in problem.queue_room.items():
        members = [i for i, item in enumerate(items) if queue in problem.lineage(item.queue)]
        for name, left in caps.items():
            if name in problem.resources:
                r = problem.resource_index(name)
                asked = [i for i in members if items[i].request[r] > 0]
                add(asked, [float(items[i].request[r]) for i in asked], float(max(0, left)))

    for higher, floor in floors.items():
        if floor > 0:
            keep = [i for i, item in enumerate(items) if item.priority == higher]
            add(keep, [float(items[i].value) for i in keep], infinity, float(floor) * (1 - TOLERANCE))

    # The queue fair-share levels (see objectives.fairness, ranked above every priority) keep at
    # least what they found: per priority, shares of the work of at least that priority.
    for rank, floor in sorted((fair or {}).items()):
        if floor <= 0:
            continue
        within: list[Any] = []
        for queue, name, deserved, held, _asked in fair_terms(problem, rank):
            r = problem.resource_index(name)
            threshold = tier_threshold(problem, queue, rank)
            fill = lp.NumVar(0, SHARE_SCALE, f"fill{rank}_{len(within)}")
            row = lp.Constraint(-infinity, float(SHARE_SCALE * held))
            row.SetCoefficient(fill, float(deserved))
            for i, item in enumerate(items):
                if item.queue == queue and item.priority >= threshold and item.request[r] > 0:
                    row.SetCoefficient(y[i], -float(SHARE_SCALE * item.request[r]))
            utility = lp.NumVar(0, infinity, f"fair{rank}_{len(within)}")
            for slope, offset in utility_pieces():
                piece = lp.Constraint(-infinity, float(offset))
                piece.SetCoefficient(utility, 1.0)
                piece.SetCoefficient(fill, -float(slope))
            within.append(utility)
        keep = lp.Constraint(float(floor) * (1 - TOLERANCE), infinity)
        for share in within:
            keep.SetCoefficient(share, 1.0)

    objective = lp.Objective()
    for i, item in enumerate(items):
        if item.priority == priority:
            objective.SetCoefficient(y[i], float(item.value))
    objective.SetMaximization()
    everything = sum(item.value * item.pods for item in items if item.priority == priority)
    if lp.Solve() != pywraplp.Solver.OPTIMAL:
        return everything
    value = float(objective.Value())
    return min(everything, math.floor(value + TOLERANCE * (1.0 + abs(value))))
