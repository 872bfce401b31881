"""The greedy's fill keeping wholly free nodes whole (:func:`vcsat.solver.greedy.greedy_keeping_whole`),
and the warm start keeping it aside where it ranks higher.

In every fill a gang of several pods is first tried all on the fullest node with room for the whole
gang. On a saturated cluster that is often a wholly free node: the small gang breaks it, and a pod
asking a whole node, tried at a later fair-share level, finds none (held46 contended s301,
benchmarks/RESULTS.md, session 46). Pod by pod the small gang fits into the GPUs left on the nodes in
use, and the whole node stays for the big pod. The third fill (largest first) does not help where
the big pod counts at a later level than the small gang: it orders the gangs within one level.
"""

from __future__ import annotations

import importlib

import pytest
from test_gap_bound import ALLOCATE, cluster

from vcsat.solver import solve
from vcsat.solver.assignment import Assignment
from vcsat.solver.deadline import SEARCH
from vcsat.solver.greedy import greedy, greedy_keeping_whole, greedy_largest_first
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.problem import Problem, build_problem

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic
warm_start = _solve_module.warm_start

# q1 runs 6 GPUs on each of the two busy nodes (2 left on each); n0 is wholly free.
BUSY = [("q1", 1, 6), ("q1", 2, 6)]
# (free GPUs per node, running, waiting (queue, priority, pods, GPUs per pod, count)), q3's GPUs
# placed at its two levels in the first fill and keeping whole nodes whole, and whether the warm
# start keeps the latter aside.
CASES = {
    # q3's two 2-GPU pods (its top priority) take 4 of n0's 8 GPUs in the first fill, and its 8-GPU
    # pod (the next priority, the next level) waits; kept whole, the pods go to n1 and n2 and the
    # 8-GPU pod takes n0.
    "small gang breaks the free node": (
        [8, 2, 2],
        BUSY,
        [("q3", 1000, 2, 2, 1), ("q3", 0, 1, 8, 1)],
        (4, 4),
        (4, 12),
        True,
    ),
    # The small gang fills a node whole (two 4-GPU pods): nowhere else has room, so it still goes
    # to the free node, anywhere, and the decision is the same.
    "gang fills the node": ([8, 2, 2], BUSY, [("q3", 1000, 2, 4, 1), ("q3", 0, 1, 8, 1)], (8, 8), (8, 8), False),
    # Two wholly free nodes: room for both either way.
    "room for all": ([8, 8, 2], BUSY[:1], [("q3", 1000, 2, 2, 1), ("q3", 0, 1, 8, 1)], (4, 12), (4, 12), False),
}


def _q3_gpus(problem: Problem, assignment: Assignment) -> tuple[int, int]:
    """q3's GPUs placed at priority 1000 and at priority 1000 or 0."""
    by_rank: dict[int, int] = {}
    for c, k in assignment.count.items():
        pod_class = problem.classes[c]
        gang = problem.gangs[pod_class.gang]
        if gang.queue == "q3":
            by_rank[gang.rank] = by_rank.get(gang.rank, 0) + k * problem.shapes[pod_class.shape].gpus
    top = by_rank.get(max(by_rank), 0) if by_rank else 0
    return top, sum(by_rank.values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_keeping_whole_nodes_places_the_whole_node_pod(name: str) -> None:
    free, running, waiting, first_gpus, whole_gpus, kept_aside = CASES[name]
    snap = cluster(free, running, waiting)
    problem = build_problem(snap, ALLOCATE)
    first = greedy(problem)
    whole = greedy_keeping_whole(problem)
    assert _q3_gpus(problem, first) == first_gpus
    assert _q3_gpus(problem, whole) == whole_gpus
    start = warm_start(problem, first)
    # The trades start from the first fills' decision; the fill keeping whole nodes is kept aside.
    assert start.hint is first or _levels(problem, start.hint) >= _levels(problem, first)
    if kept_aside:
        third = greedy_largest_first(problem)
        assert third is not None and _levels(problem, whole) > _levels(problem, third)
        assert start.aside is not None and (start.aside.placed, start.aside.shape_slots) == (
            whole.placed,
            whole.shape_slots,
        )
        assert _levels(problem, whole) > _levels(problem, start.hint)
    else:
        assert start.aside is None
    # The cycle (no search, the exchange on) ends at least as high as the fill keeping whole nodes.
    decision = solve(snap, ALLOCATE.model_copy(update={"search": True}), wall=False, skip=frozenset({SEARCH}))
    expected = fair_share_values(problem, whole)
    assert tuple(level.value for level in decision.solver.levels[: len(expected)]) >= tuple(
        expected[tier] for tier in sorted(expected)
    )
