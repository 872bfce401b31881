"""A neighbourhood search after the staged search: re-solve a small model around the incumbent.

With one worker CP-SAT runs no large-neighbourhood search of its own, and on a crowded cluster it
rarely improves the greedy's decision in the full model: trading a queue's low-priority pods for
another queue's high-priority ones while every fair-share tier holds takes many pods moving at
once, which neither CP-SAT's first solutions nor single swaps find. Here the model is the same
(every constraint, the same objective levels, solved stage by stage so every fair-share tier is
held as a constraint once won), but every (bucket, node) slot of a node outside a small free set is
fixed at the incumbent's: which gangs' pods fill those slots stays open, and the free nodes may
take other shapes. The free nodes are those with room the incumbent leaves unused (its holes),
and, where a fair-share tier waits with GPU pods, the nodes of those pods' pool and the nodes off
it that the pool's flexible work may use (:mod:`vcsat.solver.search.pool_nodes`): a tier a queue
waits on is raised by moving other work off its pool, over nodes that may have no hole at all.
That model is small enough for CP-SAT to search well within what the cycle's deterministic budget
has left.

A neighbourhood's solution is kept only when it is strictly better in the objective's first levels
(queue fair shares, tier by tier, then placed work by priority), compared as one tuple; anything
else leaves the incumbent, and with it the decision, unchanged. Its bounds prove nothing (most of
the model's solutions are cut away): the cycle's bound comes from the LP alone afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Problem
from vcsat.solver.rules.interpod_tracker import broken
from vcsat.solver.search.exact import solve_exact
from vcsat.solver.search.pool_nodes import pool_nodes
from vcsat.solver.search.staged import SearchClock
from vcsat.solver.search.top_up import top_up

MAX_FREE_NODES = 32
"""At most this many nodes are freed, those with the most GPUs left unused first: enough to let
shapes change where holes are, few enough that the model stays small."""
MIN_SECONDS = 0.1
"""Below this many deterministic seconds left, no neighbourhood is searched."""

Rank = Callable[[Problem, Assignment], tuple[int, ...]]


@dataclass
class Improvement:
    assignment: Assignment
    """The neighbourhood's solution (resolved: ``shape_slots``), strictly better than the incumbent."""
    notes: list[str]


def free_nodes(problem: Problem, incumbent: Assignment) -> frozenset[int]:
    """The nodes whose slots stay free: :func:`hole_nodes` and the waiting tier's
    :func:`vcsat.solver.search.pool_nodes.pool_nodes`."""
    return hole_nodes(problem, incumbent) | pool_nodes(problem, incumbent)


def hole_nodes(problem: Problem, incumbent: Assignment) -> frozenset[int]:
    """The nodes the incumbent leaves GPUs unused on, the most first (then by index), at most
    :data:`MAX_FREE_NODES`; none on a cluster without GPUs."""
    if res.GPU not in problem.resources:
        return frozenset()
    r = problem.resource_index(res.GPU)
    left = [row[r] for row in problem.free]
    for (s, node), k in incumbent.shape_slots.items():
        left[node] -= k * problem.shapes[s].request[r]
    holes = sorted((node for node, amount in enumerate(left) if amount > 0), key=lambda node: (-left[node], node))
    return frozenset(holes[:MAX_FREE_NODES])


def improve(
    problem: Problem,
    incumbent: Assignment,
    *,
    budget: float,
    targets: dict[str, int],
    clock: SearchClock,
    rank: Rank,
) -> Improvement | None:
    """Search the incumbent's neighbourhood within ``budget`` deterministic seconds; the solution
    when ``rank`` (the objective's first levels, compared as a tuple) puts it strictly above the
    incumbent and it keeps every rule between pods, else None."""
    if budget < MIN_SECONDS or not problem.candidates:
        return None
    free = free_nodes(problem, incumbent)
    result = solve_exact(problem, incumbent, budget=budget, targets=targets, clock=clock, free_nodes=free)
    found = result.assignment
    if found is None or broken(problem, found.shape_slots):
        return None
    found = top_up(problem, found)
    if rank(problem, found) <= rank(problem, incumbent):
        return None
    return Improvement(found, [f"neighbourhood of {len(free)} free nodes: improved", *result.notes])
