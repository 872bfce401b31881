"""The repair of the first fill's decision keeping wholly free nodes whole
(:func:`vcsat.solver.search.whole_repair.repair_whole`), and the warm start of a cycle with no time
for a second fill keeping it aside where it ranks higher.

In the first fill a gang of several pods is first tried all on the fullest node with room for the
whole gang; on a saturated cluster that is a wholly free node, and a pod asking a whole node, tried
at a later fair-share level, finds none. A loaded cycle skips the second fill and with it the fourth
(:func:`vcsat.solver.greedy.greedy_keeping_whole`); the repair takes the small gang out (with the
lowest priority's gangs, which may hold the holes it can go to), and places it pod by pod into the
GPUs left on the nodes in use, so the whole node stays for the big pod.
"""

from __future__ import annotations

import importlib

import pytest
from test_gap_bound import ALLOCATE, cluster

from vcsat.solver import solve
from vcsat.solver.assignment import Assignment
from vcsat.solver.deadline import SEARCH, SECOND_FILL, STEPS, WHOLE_REPAIR, WallPlan, trades_cut
from vcsat.solver.greedy import greedy
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.whole_repair import broken_whole, repair_whole

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic
warm_start = _solve_module.warm_start

# q1 runs 6 GPUs on each of the two busy nodes (2 left on each); n0 is wholly free.
BUSY = [("q1", 1, 6), ("q1", 2, 6)]
SMALL_GANG = ("q3", 1000, 2, 2, 1)
"""q3's gang of two 2-GPU pods at its top priority: the first fill puts it on the free node n0."""
WHOLE_POD = ("q3", 0, 1, 8, 1)
"""q3's 8-GPU pod at its next priority (the next fair-share level): only a wholly free node holds it."""
# (free GPUs per node, running, waiting (queue, priority, pods, GPUs per pod, count)), the gangs the
# repair finds broken (as indices into ``waiting``), q3's GPUs placed per priority (highest first) in
# the first fill and in the repaired decision (None: no repair), and whether the warm start keeps
# the repair aside.
CASES = {
    # The small gang breaks n0; pod by pod it fits into n1 and n2, and the 8-GPU pod takes n0.
    "small gang breaks the free node": ([8, 2, 2], BUSY, [SMALL_GANG, WHOLE_POD], [0], (4, 0), (4, 8), True),
    # q3's lowest-priority 2-GPU pods fill the holes on n1 and n2 in the first fill: the repair takes
    # them out too, the small gang goes into the holes, the 8-GPU pod takes n0, and those pods wait.
    "lowest priority holds the holes": (
        [8, 2, 2],
        BUSY,
        [SMALL_GANG, WHOLE_POD, ("q3", -100, 1, 2, 2)],
        [0],
        (4, 0, 4),
        (4, 8, 0),
        True,
    ),
    # The small gang fills the node (two 4-GPU pods): nowhere else has room, it goes back to n0.
    "gang fills the node": ([8, 2, 2], BUSY, [("q3", 1000, 2, 4, 1), WHOLE_POD], [0], (8, 0), (8, 0), False),
    # Two wholly free nodes: the 8-GPU pod is placed, no queue below its share waits, no repair.
    "room for all": ([8, 8, 2], BUSY[:1], [SMALL_GANG, WHOLE_POD], [], (4, 8), None, False),
}


def _q3_gpus(problem: Problem, assignment: Assignment) -> tuple[int, ...]:
    """q3's GPUs placed per priority, highest first (every priority of its waiting gangs)."""
    by_rank = {gang.rank: 0 for gang in problem.candidates if gang.queue == "q3"}
    for c, k in assignment.count.items():
        pod_class = problem.classes[c]
        gang = problem.gangs[pod_class.gang]
        if gang.queue == "q3":
            by_rank[gang.rank] += k * problem.shapes[pod_class.shape].gpus
    return tuple(by_rank[rank] for rank in sorted(by_rank, reverse=True))


def _gang_of(problem: Problem, position: int) -> int:
    """The gang made of the ``position``-th waiting job of :func:`cluster` (named ``w{position}``)."""
    return next(g.index for g in problem.candidates if g.key.split("/")[-1].startswith(f"w{position}"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_repair_keeps_the_free_node_whole(name: str) -> None:
    free, running, waiting, broken, first_gpus, repaired_gpus, kept_aside = CASES[name]
    snap = cluster(free, running, waiting)
    problem = build_problem(snap, ALLOCATE)
    first = greedy(problem)
    assert _q3_gpus(problem, first) == first_gpus
    assert broken_whole(problem, first) == sorted(_gang_of(problem, position) for position in broken)
    repaired = repair_whole(problem, first)
    if repaired_gpus is None:
        assert repaired is None
    else:
        assert repaired is not None and _q3_gpus(problem, repaired) == repaired_gpus
    # A cycle with no time for the second fill: the repair is asked, and kept aside where higher.
    plan = WallPlan(None, len(problem.nodes), skip=frozenset({SECOND_FILL}))
    start = warm_start(problem, first, plan)
    assert start.hint is first
    if kept_aside:
        assert repaired is not None and _levels(problem, repaired) > _levels(problem, first)
        assert start.aside is not None and start.aside.shape_slots == repaired.shape_slots
    else:
        assert start.aside is None
    # Replayed with no trades, the cycle ends at the repaired decision where it is kept aside.
    skip = frozenset({SEARCH, SECOND_FILL, trades_cut(0)})
    decision = solve(snap, ALLOCATE.model_copy(update={"search": True}), wall=False, skip=skip)
    ends = [level.value for level in decision.solver.levels]
    expected = start.aside if kept_aside else first
    assert expected is not None
    assert ends[: len(_levels(problem, expected))] == list(_levels(problem, expected))


def test_the_repair_is_a_step_a_replay_skips() -> None:
    """The repair is one of the optional steps; a replay naming it skips it (no aside), and a cycle
    with time for the second fill never asks it (the fourth fill does its work there)."""
    assert WHOLE_REPAIR in STEPS
    snap = cluster([8, 2, 2], BUSY, [SMALL_GANG, WHOLE_POD])
    problem = build_problem(snap, ALLOCATE.model_copy(update={"search": True}))
    first = greedy(problem)
    skipped = WallPlan(None, len(problem.nodes), skip=frozenset({SECOND_FILL, WHOLE_REPAIR}))
    assert warm_start(problem, first, skipped).aside is None
    assert WHOLE_REPAIR in skipped.skipped
    full = WallPlan(None, len(problem.nodes))
    warm_start(problem, first, full)
    assert WHOLE_REPAIR not in full.skipped
