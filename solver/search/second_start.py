"""The exchange run a second time, from the greedy's decision, after a search changed it.

A cycle with time for the search trades (:mod:`vcsat.solver.search.exchange`) on the decision the
search and its neighbourhood rounds leave. That decision ranks at least as high as the greedy's,
yet the exchange from it may end lower than the exchange from the greedy's: the trades free room
the greedy's fill order left in few places (a queue's small pods on the nodes another waits for),
and the search may spread the same work so that no trade frees it, each kept only where it ranks
strictly higher. On a contended cluster a short cycle, which skips the search and trades from the
greedy, can so decide better than a longer one.

So, where the search changed the decision and the exchange on it ran every trade it had (none
refused for time), the trades run once more from the greedy's decision, asked the same ``go`` and
``may_look``, and the decision they reach is kept only where the objective's first levels rank it
strictly higher than the one the first exchange reached: a tie keeps the first, so the cycle never
decides lower than without this step, and a replay that runs the same trades in the same order
decides the same.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Problem
from vcsat.solver.search.exchange import Rank, exchange, trading_queues, trading_ranks, trading_tiers


def _always() -> bool:
    return True


def from_greedy(
    problem: Problem,
    greedy: Assignment,
    reached: Assignment,
    rank: Rank,
    *,
    kinds: tuple[bool, bool, bool] = (True, True, True),
    go: Callable[[], bool] = _always,
    look: Callable[[], AbstractContextManager[object]] = nullcontext,
    may_look: Callable[[], bool] = _always,
) -> Assignment | None:
    """The exchange's decision from ``greedy`` when ``rank`` puts it strictly above ``reached``
    (the first exchange's), else None. ``kinds`` says which of the exchange's three kinds of trades
    run (the queues' own, those across ranks, the fair ones: a replay that skipped one skips it
    here too); ``go``, ``look`` and ``may_look`` are the exchange's
    (:func:`vcsat.solver.search.exchange.exchange`)."""
    own, across, fair = kinds
    queues = trading_queues(problem, greedy) if own else []
    ranks = trading_ranks(problem, greedy) if across else []
    tiers = trading_tiers(problem, greedy) if fair else []
    if not (queues or ranks or tiers):
        return None
    traded = exchange(problem, greedy, rank, queues, ranks, tiers, go=go, look=look, may_look=may_look)
    if rank(problem, traded) > rank(problem, reached):
        return traded
    return None
