"""The slope trade's third form: an unrewarded queue's whole-node gangs swapped for its own smaller
waiting work (:mod:`vcsat.solver.search.slope_trade`).

A table over one small cluster of 8-GPU nodes: n0 and n1 are free and in ``qq``'s pool, n2 has
one GPU taken by a running pod of ``qf`` (no 8-GPU pod fits it), n3-n5 are held by ``qf``'s
running pods. ``best`` places ``qa``'s 8-GPU priority-1000 gang on n0, ``qq``'s first 8-GPU gang
on n1 and ``qf``'s seven 1-GPU gangs on n2. ``qq`` waits with a second 8-GPU gang, below its
share; ``qa`` holds more than its share (the tier gains nothing from its next GPU); ``qf`` is a
little below its share (ten more 1-GPU gangs wait for n3), on a flatter piece than ``qq``.

- ``qa`` waits with seven 1-GPU priority-1000 gangs that fit anywhere: the third form takes its
  8-GPU gang off n0 and ``qf``'s small gangs off n2, none of ``qa``'s other work; ``qq``'s gang
  goes on n0, ``qa``'s small gangs take its share's worth of n2's room, the tier rises (``qq``
  gains more than ``qf`` loses) and the trade is kept.
- the same small gangs asking for n1 (held by ``qq``'s first gang): ``qa`` cannot get its share
  back, the tier would fall, and the trade is refused.
- ``qa`` waits with no smaller gangs: no third form.
"""

from __future__ import annotations

import importlib

import pytest
from slope_cluster import gang_index, qq_slope_trades, slope_cluster
from trade_checks import assert_a_kept_trade

from vcsat.solver.problem import Problem
from vcsat.solver.search.exchange import _kept, _Run

_levels = importlib.import_module("vcsat.solver.solve")._lexicographic


def _problem(qa_small: str | None) -> Problem:
    """The cluster (module docstring); ``qa_small``: where ``qa``'s small gangs may go ("any", a
    node's name), or None for none."""
    where = None if qa_small is None else {} if qa_small == "any" else {"selector": {"at": qa_small}}
    fmore = ("fmore", dict(count=10, queue="qf", gpus=1, selector={"at": "n3"}, created=30))
    return slope_cluster({0, 1}, 12, where, [fmore], named=True)


# (where qa's small gangs may go; whether a third form is made; whether it is kept)
CASES = [("any", True, True), ("n1", True, False), (None, False, False)]


@pytest.mark.parametrize(("qa_small", "made", "kept"), CASES)
def test_an_unrewarded_queue_swaps_its_whole_nodes_for_its_small_work(
    qa_small: str | None, made: bool, kept: bool
) -> None:
    problem = _problem(qa_small)
    best, abig, waiting, trades = qq_slope_trades(problem)
    fsmall = {gang_index(problem, f"ns/fsmall-{j}") for j in range(7)}
    thirds = [trade for trade in trades if trade.swap]
    assert len(thirds) == made
    if not made:
        return
    (trade,) = thirds
    # qa's whole-node gang and qf's small gangs, the work the tier counts below qq's waiting rank.
    assert trade.size == 8 and trade.whole_nodes and trade.first == {waiting}
    assert trade.drop == {abig, *fsmall}
    run = _Run(problem, lambda: True)
    best_rank = _levels(problem, best)
    out, out_rank = _kept(problem, _levels, best, best_rank, sorted(trade.drop), set(trade.first), run)
    assert_a_kept_trade(problem, best, out, _levels)
    assert (out is not best) == kept
    if kept:
        assert out_rank > best_rank and waiting in out.placed and abig not in out.placed
        # qa is back at its share with its small gangs in the room qf's held on n2.
        deserved = problem.deserved["qa"]["nvidia.com/gpu"]
        small = [
            sum(gang_index(problem, f"ns/{kind}-{j}") in out.placed for j in range(7)) for kind in ("asmall", "fsmall")
        ]
        assert small == [deserved, 7 - deserved]
