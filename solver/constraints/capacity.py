"""Capacity: no node exceeds any allocatable resource, the pods count included.

Counts are tied to slots here too: the pods the gangs place are exactly the pods the nodes
receive, bucket by bucket. Within a bucket each pod counts at the bucket's least request (a
relaxation that the decode makes exact, see :class:`vcsat.solver.problem.Bucket`). Amounts enter
CP-SAT divided exactly by their resource's common divisor (:mod:`vcsat.solver.units`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsat.solver.problem import Bucket, Problem
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def add_capacity(cp: cp_model.CpModel, problem: Problem, v: Variables, buckets: list[Bucket]) -> None:
    from ortools.sat.python import cp_model

    counts_of_shape: dict[int, list[cp_model.IntVar]] = {}
    for c, var in v.count.items():
        counts_of_shape.setdefault(problem.classes[c].shape, []).append(var)
    slots_of_bucket: dict[int, list[cp_model.IntVar]] = {}
    for (k, _node), var in v.slot.items():
        slots_of_bucket.setdefault(k, []).append(var)
    for bucket in buckets:
        counts = [var for s in bucket.shapes for var in counts_of_shape.get(s, [])]
        if counts:
            cp.add(cp_model.LinearExpr.sum(slots_of_bucket.get(bucket.index, [])) == cp_model.LinearExpr.sum(counts))

    units = problem.units
    for node, terms in v.on_node.items():
        for r, room in enumerate(problem.free[node]):
            used = [t for t in terms if t.bucket.request[r] > 0]
            if len(used) < 2 or sum(t.upper * t.bucket.request[r] for t in used) <= room:
                continue  # the slots' upper bounds already keep them within room
            coefs = [units.request(r, t.bucket.request[r]) for t in used]
            cp.add(cp_model.LinearExpr.weighted_sum([t.var for t in used], coefs) <= units.room(r, room))
