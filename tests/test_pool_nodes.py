"""The neighbourhood's pool nodes (:mod:`vcsat.solver.search.pool_nodes`): where a fair-share tier
waits with GPU pods confined to a pool that flexible work fills, the neighbourhood frees the pool
and the nodes that work may move to, and finds the move the incumbent's holes alone do not.

- A table on the re-pack trade's two-node clusters (``n0`` of kind ``a``, the only node q1's
  waiting ``want`` pods may use; ``n1`` of kind ``b``): which nodes are freed, and whether the
  neighbourhood raises the tier. With ``n0`` full of q2's ``flex`` pods (no selector) and ``n1``
  a hole, the holes alone free ``n1`` only, where ``want`` may not go: the neighbourhood of the
  holes finds nothing, the pool's moves ``flex`` to ``n1`` and places ``want`` on ``n0``.
- A Hypothesis property over those clusters (with the incumbent drawn too): the neighbourhood
  returns nothing or a solution strictly higher in the objective's first levels, every node's
  room kept, and the validator accepts its decision.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gap_bound import ALLOCATE
from test_neighbourhood import _decision
from test_repack_trade import _case, _count, _start

from vcsat.solver import check
from vcsat.solver.objectives.fairness import fair_ranks, fair_share_values
from vcsat.solver.problem import build_problem
from vcsat.solver.search import neighbourhood
from vcsat.solver.search.neighbourhood import free_nodes, hole_nodes, improve
from vcsat.solver.search.pool_nodes import pool_nodes, waiting_pool
from vcsat.solver.search.staged import SearchClock

_solve_module = importlib.import_module("vcsat.solver.solve")
rank = _solve_module._lexicographic


def _improve(problem: Any, start: Any) -> Any:
    return improve(problem, start, budget=5.0, targets={}, clock=SearchClock(workers=1, wall=False), rank=rank)


# (flex, low, busy, want, pinned, the nodes the holes free, the pool nodes freed, want placed after
# the neighbourhood; None: not asserted)
CASES = [
    (8, 0, 0, 4, False, {"n1"}, {"n0", "n1"}, 4),  # n0 full of flex, n1 empty: the pool's move
    (8, 0, 0, 8, False, {"n1"}, {"n0", "n1"}, 8),  # the whole of n0 for want, flex all on n1
    (6, 0, 0, 2, False, {"n0", "n1"}, {"n0", "n1"}, 2),  # a hole on n0 too: the holes suffice
    # n1 full of q3's confined work: no room off the pool (n1 not freed); n0 alone is freed, and
    # n0 shared between q2 and q1 raises the tier on the concave utility (3 of q1's pods against
    # 3 of q2's: the freed model's proven optimum).
    (8, 0, 8, 4, False, set(), {"n0"}, 3),
    # flex may not leave the pool: no pool nodes (flex and want then share n0's slots' bucket,
    # which the holes' neighbourhood already trades between them: not asserted here)
    (8, 0, 0, 4, True, {"n1"}, set(), None),
]


@pytest.mark.parametrize(("flex", "low", "busy", "want", "pinned", "holes", "pool", "placed"), CASES)
def test_the_pool_neighbourhood_moves_flexible_work_off_the_waiting_pool(
    flex: int, low: int, busy: int, want: int, pinned: bool, holes: set[str], pool: set[str], placed: int | None
) -> None:
    problem = build_problem(_case(flex, low, busy, want, pinned=pinned), ALLOCATE)
    start = _start(problem)
    names = {i: n.name for i, n in enumerate(problem.nodes)}
    assert {names[n] for n in waiting_pool(problem, start)} == {"n0"}
    assert {names[n] for n in hole_nodes(problem, start)} == holes
    assert {names[n] for n in pool_nodes(problem, start)} == pool
    assert free_nodes(problem, start) == hole_nodes(problem, start) | pool_nodes(problem, start)
    if placed is None:
        return
    better = _improve(problem, start)
    assert better is not None
    top = fair_ranks(problem)[0]
    assert fair_share_values(problem, better.assignment)[top] > fair_share_values(problem, start)[top]
    assert _count(problem, better.assignment, "want") == placed
    assert check(_case(flex, low, busy, want, pinned=pinned), _decision(problem, better.assignment), ALLOCATE) == []


def test_the_holes_alone_do_not_find_the_move() -> None:
    # The first row of the table with the pool nodes left out: n0's slots stay flex's.
    problem = build_problem(_case(8, 0, 0, 4), ALLOCATE)
    start = _start(problem)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(neighbourhood, "pool_nodes", lambda problem, assignment: frozenset())
        assert _improve(problem, start) is None
    assert _improve(problem, start) is not None


def test_no_pool_where_no_tier_waits() -> None:
    # want all placed by hand on n0 (room for them): nothing waits, nothing is freed for a pool.
    problem = build_problem(_case(4, 0, 0, 4), ALLOCATE)
    start = _start(problem)
    done = _improve(problem, start)
    assert done is not None and _count(problem, done.assignment, "want") == 4
    assert waiting_pool(problem, done.assignment) == frozenset()
    assert pool_nodes(problem, done.assignment) == frozenset()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    flex=st.integers(0, 8),
    low=st.integers(0, 8),
    busy=st.integers(0, 8),
    want=st.integers(1, 8),
    pinned=st.booleans(),
    wsize=st.sampled_from([1, 2, 4, 8]),
)
def test_the_neighbourhood_never_ranks_lower_nor_breaks_a_rule(
    flex: int, low: int, busy: int, want: int, pinned: bool, wsize: int
) -> None:
    busy = min(busy, 8 - low)  # the incumbent must fit n1's 8 GPUs
    snap = _case(flex, low, busy, want, pinned=pinned, wsize=wsize)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem)
    assert check(snap, _decision(problem, start), ALLOCATE) == []
    better = _improve(problem, start)
    if better is None:
        return
    assert rank(problem, better.assignment) > rank(problem, start)
    assert check(snap, _decision(problem, better.assignment), ALLOCATE) == []
