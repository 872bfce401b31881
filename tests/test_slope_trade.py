"""The slope trade (:mod:`vcsat.solver.search.slope_trade`): a fair-share tier's room moved from a
flatter queue to a steeper one.

- The utility's slope where a queue stands: a table over shares, the breakpoints included (the
  flatter piece beyond them).
- Which queues are flatter: a queue far below its share gains the tier more per GPU than one near
  it, and a queue at its share gains nothing.
- On the contended shape in miniature (80 nodes, a seed where the greedy fills the tier short), the
  exchange with the slope trades ranks strictly higher than without them, keeps every node's room
  and every gang's minimum, and the cycle's decision from there is one the validator accepts.
"""

from __future__ import annotations

import importlib
from fractions import Fraction
from pathlib import Path

import pytest
from shape_files import ALLOCATE, shape_file, shape_problem

from vcsat.adapters.convert import instance_file
from vcsat.solver import check, solve
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.fairness import SHARE_SCALE, fair_ranks, fair_terms, share_utility
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.slope_trade import gains, slope_at, slope_trades

solve_module = importlib.import_module("vcsat.solver.solve")


SLOPES = [(0, 4), (100, 4), (249, 4), (250, 3), (500, 2), (749, 2), (750, 1), (999, 1), (1000, 0)]


@pytest.mark.parametrize(("fill", "slope"), SLOPES)
def test_the_slope_is_what_one_more_thousandth_adds(fill: int, slope: int) -> None:
    assert slope_at(fill) == slope
    if fill < SHARE_SCALE:
        assert share_utility(fill + 1) - share_utility(fill) == slope


def test_a_queues_gain_per_gpu_is_the_slope_where_it_stands_over_its_deserved_gpus(tmp_path: Path) -> None:
    problem = shape_problem(tmp_path, "contended", 80, 1)
    gpu = problem.resource_index("nvidia.com/gpu")
    tiers = fair_ranks(problem)
    assert tiers  # the contended shape ranks its queues' shares in tiers
    for assignment in (Assignment(), greedy(problem)):
        for tier in tiers:
            slopes = gains(problem, assignment, tier)
            terms = fair_terms(problem, tier)
            assert set(slopes) == {queue for queue, *_ in terms}
            for queue, _name, deserved, held, asked in terms:
                added = sum(
                    assignment.count.get(c, 0) * problem.shapes[problem.classes[c].shape].request[gpu] for c in asked
                )
                fill = min(SHARE_SCALE, SHARE_SCALE * (held + added) // deserved)
                assert slopes[queue] == Fraction(slope_at(fill), deserved)


def _room_kept(problem: Problem, assignment: Assignment) -> bool:
    left = problem.room_left(assignment.shape_slots)
    return all(amount >= 0 for row in left for amount in row)


# pure_only: turns the slope trades off by swapping them, which the compiled exchange calls bound.
@pytest.mark.pure_only
def test_the_slope_trades_raise_a_tier_the_other_trades_leave(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snap = instance_file.read_snapshot(shape_file(tmp_path, "contended", 80, 1))
    problem = build_problem(snap, ALLOCATE)
    start = greedy(problem)
    rank = solve_module._lexicographic
    queues = exchange_module.trading_queues(problem, start)
    ranks = exchange_module.trading_ranks(problem, start)
    tiers = exchange_module.trading_tiers(problem, start)
    with_slopes = exchange_module.exchange(problem, start, rank, queues, ranks, tiers)
    with monkeypatch.context() as patch:
        patch.setattr(exchange_module, "slope_trades", lambda *args, **kwargs: [])
        without = exchange_module.exchange(problem, start, rank, queues, ranks, tiers)
    assert rank(problem, with_slopes) > rank(problem, without) >= rank(problem, start)
    assert _room_kept(problem, with_slopes)
    # Every gang placed whole: each placed gang's classes hold at least its minimum.
    for g in with_slopes.placed:
        gang = problem.gangs[g]
        assert sum(with_slopes.count.get(c, 0) for c in gang.classes) >= gang.need
    # Some trade of the kind exists there and names only placed gangs to take out.
    trades = [
        trade
        for tier in tiers
        for queue, top, first, _largest in exchange_module._raisable(problem, without, tier)
        for trade in slope_trades(problem, without, tier, queue, top, first)
    ]
    assert trades and all(trade.drop <= without.placed and not trade.first & without.placed for trade in trades)
    decision = solve(snap, ALLOCATE, wall=False)
    assert check(snap, decision, ALLOCATE) == []
