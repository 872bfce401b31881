"""GPU-share room per size: cuts that keep the model's count of GPU shares close to what real GPUs hold.

Why: the model sees a node's room for GPU shares as one sum of thousandths (free GPUs × 1000 plus
what shared GPUs have left), so it may count a 470-thousandths share into three slivers of 200. Near
saturation most of that sum is slivers: on Alibaba's openb trace the search then "places" pods the
decode cannot put on any GPU, every refinement finds the same pods short, and the cycle falls back
to the greedy decision, so the exact search adds nothing exactly where it could place most.

The cuts (valid: every real packing keeps them): a share of at least ``m`` thousandths fits only on
a GPU with at least ``m`` left, and a GPU with ``left`` thousandths holds at most ``left // m`` such
shares; a whole-GPU pod takes an untouched GPU, which could have held ``1000 // m`` of them. So per
node and per share size ``m`` of the node's share buckets::

    Σ_{share buckets b, share_b ≥ m} slot[b, node] + (1000 // m) · Σ_{GPU buckets b} gpus_b · slot[b, node]
        ≤ Σ_{GPUs g} left_g // m

Cuts that the slots' upper bounds already keep are left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.solver.problem import Problem
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def gpu_rooms(problem: Problem, node: int) -> list[int]:
    """Thousandths left on each GPU of the node that has room (untouched or shared)."""
    rooms = [FULL_GPU_MILLI] * len(problem.free_gpu_ids[node])
    rooms += [FULL_GPU_MILLI - used for used in problem.shared_milli[node].values() if used < FULL_GPU_MILLI]
    return rooms


def add_share_room(cp: cp_model.CpModel, problem: Problem, v: Variables) -> int:
    """Add the cuts; returns how many were added."""
    from ortools.sat.python import cp_model

    if res.GPU_MILLI not in problem.resources:
        return 0
    milli = problem.resource_index(res.GPU_MILLI)
    added = 0
    for node, terms in sorted(v.on_node.items()):
        shares = [(t, t.bucket.request[milli]) for t in terms if t.bucket.gpus == 0 and t.bucket.request[milli] > 0]
        if not shares:
            continue
        whole = [t for t in terms if t.bucket.gpus > 0]
        rooms = gpu_rooms(problem, node)
        for size in sorted({share for _, share in shares}):
            capacity = sum(room // size for room in rooms)
            per_gpu = FULL_GPU_MILLI // size
            counted = [(t.var, 1, t.upper) for t, share in shares if share >= size]
            counted += [(t.var, per_gpu * t.bucket.gpus, t.upper) for t in whole]
            if sum(coef * upper for _, coef, upper in counted) <= capacity:
                continue
            load = cp_model.LinearExpr.weighted_sum([var for var, _, _ in counted], [c for _, c, _ in counted])
            cp.add(load <= capacity)
            added += 1
    return added
