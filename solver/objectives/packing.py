"""Packing against fragmentation: keep whole GPU nodes free, fill partly used ones.

After the work itself, what hurts the next cycle most is room scattered in pieces too small for
big jobs: an 8-GPU pod needs a node with all 8 GPUs free. Two levels, in this order: open as few
wholly free GPU nodes as possible, then complete as many partly used GPU nodes as possible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Problem
from vcsat.solver.search.levels import Level, make_level
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def _gpu_nodes(problem: Problem) -> tuple[list[int], list[int]]:
    """(wholly free GPU nodes, partly used GPU nodes) among the nodes with free GPUs."""
    if res.GPU not in problem.resources:
        return [], []
    gpu = problem.resource_index(res.GPU)
    whole: list[int] = []
    partial: list[int] = []
    for node, row in enumerate(problem.free):
        total, free = problem.nodes[node].gpus, row[gpu]
        if total <= 0 or free <= 0:
            continue
        (whole if free == total else partial).append(node)
    return whole, partial


def packing_levels(cp: cp_model.CpModel, problem: Problem, v: Variables, hint: Assignment) -> list[Level]:
    """The two packing levels; their indicator variables are hinted from ``hint``'s placements."""
    from ortools.sat.python import cp_model

    whole, partial = _gpu_nodes(problem)
    used_by_hint = _used(problem, hint)
    opened: list[tuple[cp_model.IntVar, int]] = []
    completed: list[tuple[cp_model.IntVar, int]] = []
    gpu = problem.resource_index(res.GPU) if res.GPU in problem.resources else -1
    whole_nodes = frozenset(whole)
    for node in whole + partial:
        gpu_terms = [(t.var, t.bucket.gpus) for t in v.on_node.get(node, []) if t.bucket.gpus > 0]
        if not gpu_terms:
            continue
        free = problem.free[node][gpu]
        used = cp_model.LinearExpr.weighted_sum([var for var, _ in gpu_terms], [coef for _, coef in gpu_terms])
        if node in whole_nodes:
            is_open = cp.new_bool_var(f"opened[{node}]")
            v.upper[is_open.index] = 1
            cp.add(used <= free * is_open)
            cp.add_hint(is_open, 1 if used_by_hint.get(node, 0) > 0 else 0)
            opened.append((is_open, -1))
        else:
            is_full = cp.new_bool_var(f"completed[{node}]")
            v.upper[is_full.index] = 1
            cp.add(used == free).only_enforce_if(is_full)
            cp.add_hint(is_full, 1 if used_by_hint.get(node, 0) == free else 0)
            completed.append((is_full, 1))
    return [
        make_level("whole GPU nodes kept free", opened, upper_of=v.upper, measure=_measure_opened),
        make_level("partly used GPU nodes completed", completed, upper_of=v.upper, measure=_measure_completed),
    ]


def _used(problem: Problem, assignment: Assignment) -> dict[int, int]:
    return assignment.gpus_used({shape.index: shape.gpus for shape in problem.shapes})


def _measure_opened(problem: Problem, assignment: Assignment) -> int:
    whole, _ = _gpu_nodes(problem)
    used = _used(problem, assignment)
    return -sum(1 for node in whole if used.get(node, 0) > 0)


def _measure_completed(problem: Problem, assignment: Assignment) -> int:
    _, partial = _gpu_nodes(problem)
    gpu = problem.resource_index(res.GPU)
    used = _used(problem, assignment)
    return sum(1 for node in partial if used.get(node, 0) == problem.free[node][gpu])
