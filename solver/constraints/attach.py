"""NodeVolumeLimits with shared CSI volumes: each takes a node's attach slot once, whoever brings it.

Per shared volume (:mod:`vcsat.solver.rules.attach`) and per node with a limit for its driver that
does not hold it already, one boolean, on when any slot of a bucket using the volume is on the
node. A node's limit for a driver then bounds its pods' own (unshared) volumes plus those
booleans. Buckets of such shapes are exact, so the slots count real pods. Never a boolean per
(pod, node): shared volumes are few, and only limited nodes a bucket may use get one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Bucket, Problem
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def add_attach_limits(
    cp: cp_model.CpModel, problem: Problem, v: Variables, buckets: list[Bucket], hint: Assignment
) -> None:
    from ortools.sat.python import cp_model

    attach = problem.attach
    if attach is None:
        return
    on: dict[tuple[str, int], cp_model.IntVar] = {}
    new_of: dict[tuple[int, str], list[cp_model.IntVar]] = {}
    hinted: dict[tuple[str, int], int] = {}
    for (s, node), k in hint.shape_slots.items():
        if k > 0:
            for volume in problem.shapes[s].volumes:
                hinted[(volume, node)] = 1
    for bucket in buckets:
        volumes = problem.shapes[bucket.shapes[0]].volumes
        if not volumes:
            continue
        for node, var in v.slots_of(bucket.index):
            held = attach.attached.get(node, frozenset())
            for volume in sorted(volumes):
                driver = attach.driver[volume]
                if (node, driver) not in attach.limited or volume in held:
                    continue
                flag = on.get((volume, node))
                if flag is None:
                    flag = on[(volume, node)] = cp.new_bool_var(f"attach[{volume},{node}]")
                    new_of.setdefault((node, driver), []).append(flag)
                    cp.add_hint(flag, hinted.get((volume, node), 0))
                cp.add(var <= v.upper[var.index] * flag)
    for (node, driver), flags in sorted(new_of.items()):
        r = attach.resource[driver]
        own = [(t.var, t.bucket.request[r]) for t in v.on_node.get(node, []) if t.bucket.request[r] > 0]
        terms = [var for var, _ in own] + flags
        coefs = [amount for _, amount in own] + [1] * len(flags)
        # kube-scheduler lets a pod that adds no volume onto a node already over its limit.
        cp.add(cp_model.LinearExpr.weighted_sum(terms, coefs) <= max(0, problem.free[node][r]))
