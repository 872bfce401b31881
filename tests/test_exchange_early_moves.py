"""The move trades come before the clearing and slope trades where the chain and spare-only step
trades change nothing (:func:`vcsat.solver.search.exchange.exchange`, benchmarks/RESULTS.md,
session 44): on the generated clusters where they do, the pool and slope trades that come first are
refused and spend the few trades a short cycle fits before the moves that raise placed work.

A table on :mod:`test_move_trade`'s clusters (three 8-GPU nodes; q1's priority-1000 8-GPU pod
``whole`` waits for a node that q2's 1-GPU ``mover`` holds; q4 below its share waits with three
8-GPU pods, so the fair-share trades run). No chain or spare-only step trade is kept there, so
the first trade tried is the move trade where one is offered, and the move trades are not tried a
second time on the same decision; where none is offered, the first is a clearing or slope trade as
before. The trades are told apart by the exchange function that made each (the exchange's private
helpers wrapped: ``pure_only``).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from test_gap_bound import ALLOCATE
from test_move_trade import _case, _key, _levels, _start, _trades

from vcsat.solver.problem import build_problem
from vcsat.solver.search import exchange as exchange_module

# (GPUs q3 runs on n1, q3's weight, whether a move trade is offered and kept)
CASES = [
    (6, 1, True),  # n1 has a free GPU: the mover goes there
    (6, 10, True),  # the same, q3 at its share
    (7, 1, True),  # low out of n1, the mover in
    (7, 10, False),  # low needed (q3 at its share): no move trade offered, the others as before
]


@pytest.mark.pure_only
@pytest.mark.parametrize(("busy", "q3_weight", "moved"), CASES)
def test_the_move_trades_come_first_where_no_chain_or_spare_step_trade_is_kept(
    busy: int, q3_weight: int, moved: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = build_problem(_case(busy, q3_weight), ALLOCATE)
    start = _start(problem, busy)
    queues, ranks, tiers = _trades(problem, start)
    assert ranks and tiers  # the move trades and the fair-share trades both run
    made: list[tuple[str, bool]] = []
    kept = exchange_module._kept

    def recorded(problem: Any, rank: Any, best: Any, best_rank: Any, *args: Any, **kwargs: Any) -> Any:
        out = kept(problem, rank, best, best_rank, *args, **kwargs)
        made.append((sys._getframe(1).f_code.co_name, out[0] is not best))
        return out

    monkeypatch.setattr(exchange_module, "_kept", recorded)
    traded = exchange_module.exchange(problem, start, _levels, queues, ranks, tiers)
    assert made, "the exchange tried no trade"
    first, kept_first = made[0]
    if moved:
        assert (first, kept_first) == ("_move_trades", True)
        # Tried once: not again after the clearing and slope trades on a decision they left as it was.
        tried = [i for i, (name, _) in enumerate(made) if name == "_move_trades"]
        assert tried == list(range(len(tried)))
        assert _key(problem, "ns/whole-0") in traded.placed
    else:
        assert first in ("_pool_trades", "_slope_trades")
        assert "_move_trades" not in {name for name, _ in made}
    assert _levels(problem, traded) >= _levels(problem, start)
