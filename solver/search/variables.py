"""The decision variables of the CP-SAT model, created once and shared by every module.

Variables are counts, never (pod, node) booleans (design.md): ``placed[gang]`` is the gang's
all-or-nothing switch, ``count[pod_class]`` how many of a class's interchangeable pods go, and
``slot[bucket, node]`` how many pods of a bucket land on one node. Constraint and objective modules
read a node's load through :attr:`Variables.on_node`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vcsat.solver.problem import Bucket, Problem

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


@dataclass(frozen=True)
class NodeTerm:
    """One slot variable's share of a node: ``var`` pods of ``bucket``, each asking its request."""

    var: cp_model.IntVar
    bucket: Bucket
    upper: int


@dataclass
class Variables:
    placed: dict[int, cp_model.IntVar]
    count: dict[int, cp_model.IntVar]
    slot: dict[tuple[int, int], cp_model.IntVar]
    on_node: dict[int, list[NodeTerm]]
    upper: dict[int, int]
    """Per variable index: its domain's upper bound (every domain here starts at 0)."""
    by_bucket: dict[int, list[tuple[int, cp_model.IntVar]]] = field(default_factory=dict, init=False, repr=False)
    """Per bucket: its (node, slot) pairs, filled on first use of :meth:`slots_of`."""

    def slots_of(self, bucket: int) -> list[tuple[int, cp_model.IntVar]]:
        """The bucket's slots with their nodes, as created: what a rule over a few buckets reads
        without walking every node."""
        if not self.by_bucket and self.slot:
            for (b, node), var in self.slot.items():
                self.by_bucket.setdefault(b, []).append((node, var))
        return self.by_bucket.get(bucket, [])

    def all(self) -> list[cp_model.IntVar]:
        return [*self.placed.values(), *self.count.values(), *self.slot.values()]


def create_variables(cp: cp_model.CpModel, problem: Problem, buckets: list[Bucket]) -> Variables:
    placed: dict[int, cp_model.IntVar] = {}
    count: dict[int, cp_model.IntVar] = {}
    upper: dict[int, int] = {}
    demand: dict[int, int] = {}
    for gang in problem.candidates:
        placed[gang.index] = cp.new_bool_var(f"placed[{gang.index}]")
        upper[placed[gang.index].index] = 1
        for c in gang.classes:
            pod_class = problem.classes[c]
            if not problem.shapes[pod_class.shape].nodes:
                continue
            count[c] = cp.new_int_var(0, len(pod_class.pods), f"count[{c}]")
            upper[count[c].index] = len(pod_class.pods)
            demand[pod_class.shape] = demand.get(pod_class.shape, 0) + len(pod_class.pods)

    slot: dict[tuple[int, int], cp_model.IntVar] = {}
    on_node: dict[int, list[NodeTerm]] = {}
    for bucket in buckets:
        bucket_demand = sum(demand.get(s, 0) for s in bucket.shapes)
        if bucket_demand == 0:
            continue
        fits_on = bucket.upper  # read once: a property, made on the first read
        for node in bucket.nodes:
            top = min(fits_on[node], bucket_demand)
            var = cp.new_int_var(0, top, f"slot[{bucket.index},{node}]")
            slot[(bucket.index, node)] = var
            upper[var.index] = top
            on_node.setdefault(node, []).append(NodeTerm(var, bucket, top))
    return Variables(placed, count, slot, on_node, upper)
