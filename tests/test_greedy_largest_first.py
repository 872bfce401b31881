"""The greedy's third fill (:func:`vcsat.solver.greedy.greedy_largest_first`): each queue's work at
a fair-share level tried largest first, and the warm start keeping it only where it ranks higher.

In job order a queue's small gangs, older than its big one, take the GPUs best fit leaves on the
node with the most room, and the big gang then finds no node with room for it: the level stays
short of what the free room gives (held45 contended s270, benchmarks/RESULTS.md, session 45).
Largest first, the big gang takes the node while it is whole and the small ones fill the rest.
The cycle keeps that decision aside (the trades start from the first two fills' decision) and
ends with it where it ranks higher than what the trades reached; where job order packs as well,
nothing is kept aside.
"""

from __future__ import annotations

import importlib

import pytest
from test_gap_bound import ALLOCATE, cluster

from vcsat.solver import solve
from vcsat.solver.deadline import SEARCH
from vcsat.solver.greedy import greedy, greedy_by_gain, greedy_largest_first
from vcsat.solver.objectives.fairness import fair_ranks, fair_share_values
from vcsat.solver.problem import build_problem

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic
warm_start = _solve_module.warm_start

# (free GPUs per node, running (queue, node, GPUs), waiting (queue, priority, pods, GPUs, count)),
# the first level's value in job order and largest first, and whether the warm start keeps the third aside.
# q1 runs 10 of the 16 GPUs; q3 (weight 4) deserves 8 and holds none: each of its GPUs raises the level.
Q1_RUNS = [("q1", 0, 4), ("q1", 1, 6)]
CASES = {
    # Four one-GPU jobs older than a 4-GPU one: in job order two go to the 2-free node and two to
    # the 4-free node, which then has 2 left and the 4-GPU job waits (4 of q3's GPUs, not 6).
    "small gangs older": (
        [4, 2],
        Q1_RUNS,
        [("q3", 0, 1, 1, 4), ("q3", 0, 1, 4, 1)],
        1750,
        2250,
        True,
    ),
    # The 4-GPU job older: job order is largest first already; the same decision, the first kept.
    "big gang older": (
        [4, 2],
        Q1_RUNS,
        [("q3", 0, 1, 4, 1), ("q3", 0, 1, 1, 4)],
        2250,
        2250,
        False,
    ),
    # Room for everything: the order changes nothing.
    "room for all": ([8, 4], [("q1", 1, 4)], [("q3", 0, 1, 1, 4), ("q3", 0, 1, 4, 1)], 2500, 2500, False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_largest_first_places_the_big_gang_and_the_cycle_ends_with_it(name: str) -> None:
    free, running, waiting, in_job_order, largest, kept_aside = CASES[name]
    snap = cluster(free, running, waiting)
    problem = build_problem(snap, ALLOCATE)
    first = greedy(problem)
    third = greedy_largest_first(problem)
    assert third is not None
    assert fair_share_values(problem, first)[0] == in_job_order
    assert fair_share_values(problem, third)[0] == largest
    start = warm_start(problem, first)
    others = [first] + [a for a in (greedy_by_gain(problem),) if a is not None]
    # The trades start from the first two fills' decision; the third is only kept aside.
    assert _levels(problem, start.hint) == max(_levels(problem, a) for a in others)
    if kept_aside:
        assert start.aside is not None and (start.aside.placed, start.aside.shape_slots) == (
            third.placed,
            third.shape_slots,
        )
        assert _levels(problem, third) > _levels(problem, start.hint)
    else:
        assert start.aside is None
    # The cycle (no search, the exchange on) ends at least as high as the third fill, and as high
    # as the warm start it traded from.
    problem_levels = fair_share_values(problem, third)
    decision = solve(snap, ALLOCATE.model_copy(update={"search": True}), wall=False, skip=frozenset({SEARCH}))
    assert decision.solver.levels[0].value >= problem_levels[0]


def test_no_fair_share_level_no_third_fill() -> None:
    """One queue alone has no fair-share level to fill: no third fill."""
    problem = build_problem(cluster([8, 8], [], [("q3", 0, 1, 1, 4), ("q3", 0, 1, 4, 1)]), ALLOCATE)
    assert not fair_ranks(problem)
    assert greedy_largest_first(problem) is None
