"""The slope trade's second form: whole nodes held by a queue the tier no longer rewards
(:mod:`vcsat.solver.search.slope_trade`).

A table over one small cluster of 8-GPU nodes: n0 and n1 are free, n2 has one GPU taken by a
running pod of ``qf`` (no 8-GPU pod fits it), n3-n5 are held by ``qf``'s running pods. ``best``
places ``qa``'s 8-GPU priority-1000 gang on n0, ``qq``'s first 8-GPU gang on n1 and ``qf``'s seven
1-GPU gangs on n2. ``qq`` (its pods selecting ``pool=q`` nodes) waits with a second 8-GPU gang,
about half its share held; ``qa`` and ``qf`` hold enough of their shares that the tier gains
nothing from their next GPU.

- ``qa`` also waits with seven 1-GPU priority-1000 gangs: the second form takes its 8-GPU gang off
  n0 as well; ``qq``'s gang goes there, ``qa``'s small gangs take its share's worth of n2's room
  from ``qf``'s, the tier rises (``qq`` gains far more than ``qf`` loses) and the trade is kept.
  The first form (``qf``'s small gangs, the work the tier counts below ``qq``'s waiting rank) frees
  no whole node: ``qq``'s gang stays out.
- the same without ``qa``'s small gangs: the second form is made, and refused (``qa`` would lose
  its share: the tier falls).
- n0 outside ``qq``'s pool (no ``pool=q`` label): no second form.
"""

from __future__ import annotations

import importlib

import pytest
from slope_cluster import gang_index, qq_slope_trades, slope_cluster
from trade_checks import assert_a_kept_trade

from vcsat.solver.problem import Problem
from vcsat.solver.search.exchange import _kept, _Run

_levels = importlib.import_module("vcsat.solver.solve")._lexicographic


def _problem(qa_small: bool, n0_in_pool: bool) -> Problem:
    return slope_cluster({0, 1} if n0_in_pool else {1}, 8, {} if qa_small else None)


# (qa waits with small gangs, n0 in qq's pool; per slope trade made, whether it takes qa's gang
# off n0; whether the second form is kept)
CASES = [(True, True, [False, True, True], True), (False, True, [False, True], False), (True, False, [False], False)]


@pytest.mark.parametrize(("qa_small", "n0_in_pool", "forms", "kept"), CASES)
def test_a_queue_the_tier_no_longer_rewards_gives_up_its_whole_nodes(
    qa_small: bool, n0_in_pool: bool, forms: list[bool], kept: bool
) -> None:
    problem = _problem(qa_small, n0_in_pool)
    best, abig, waiting, trades = qq_slope_trades(problem)
    assert [abig in trade.drop for trade in trades] == forms
    assert all(trade.size == 8 and trade.first == {waiting} and trade.drop <= best.placed for trade in trades)
    assert len(trades) == 1 or trades[0].drop < trades[1].drop  # the second form takes out more
    run = _Run(problem, lambda: True)
    best_rank = _levels(problem, best)
    for trade in trades:
        if trade.swap:
            # The third form (tests/test_slope_trade_swap.py) keeps qf's small gangs: qf is not
            # rewarded by the tier either.
            assert trade.drop == {abig}
            continue
        out, out_rank = _kept(problem, _levels, best, best_rank, sorted(trade.drop), set(trade.first), run)
        assert_a_kept_trade(problem, best, out, _levels)
        if abig not in trade.drop:
            assert waiting not in out.placed  # qf's small gangs alone free no whole node
            continue
        assert (out is not best) == kept
        if kept:
            assert out_rank > best_rank and waiting in out.placed
            # qa is back at its share with small gangs on n2 (in the room qf's held), qf's take
            # the rest of n2.
            deserved = problem.deserved["qa"]["nvidia.com/gpu"]
            small = [
                sum(gang_index(problem, f"ns/{kind}-{j}") in out.placed for j in range(7))
                for kind in ("asmall", "fsmall")
            ]
            assert abig not in out.placed and small == [deserved, 7 - deserved]
