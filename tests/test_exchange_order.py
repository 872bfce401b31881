"""The exchange's step trades come as soon as a slope trade is refused, the slope trades going on
after them.

Why: a short cycle fits the first few trades only, so the order decides which kinds it gets. On
the generated clusters a step trade, where one is offered, is kept far more often than a slope
trade (most slope trades are tried and refused by the ranks); all of them before the first slope
trade, though, can leave a slope trade that would have been kept first a point short
(benchmarks/RESULTS.md, sessions 36 and 38). Checked two ways: with the looks stubbed and every
trade refused, the trades the exchange tries, in order (a slope trade, every step trade, the next
slope trade; the step trades once per decision, not again after the slope trades on the same one);
and, on the step trade's own small clusters, that with a single trade allowed the one made raises
a tier, whether the giving queue loses nothing or a step.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from test_gap_bound import ALLOCATE
from test_step_trade import _case, _key, _start

from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.problem import build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.slope_trade import SlopeTrade
from vcsat.solver.search.step_trade import StepTrade

_levels = importlib.import_module("vcsat.solver.solve")._lexicographic


def _one_trade() -> Any:
    """A ``go`` that lets one trade start, then refuses every later one."""
    asked = [0]

    def go() -> bool:
        asked[0] += 1
        return asked[0] <= 1

    return go


# (slope trades offered, step trades offered, the trades tried in order)
TRIED = [
    (2, 1, ["slope-0", "step-0", "slope-1"]),
    (3, 2, ["slope-0", "step-0", "step-1", "slope-1", "slope-2"]),
    (1, 1, ["slope-0", "step-0"]),
    (2, 0, ["slope-0", "slope-1"]),
    (0, 2, ["step-0", "step-1"]),
]


# pure_only: swaps the exchange's looks to count them, which the compiled exchange calls bound.
@pytest.mark.pure_only
@pytest.mark.parametrize(("slopes", "steps", "tried"), TRIED)
def test_the_step_trades_come_after_the_first_refused_slope_trade(
    monkeypatch: pytest.MonkeyPatch, slopes: int, steps: int, tried: list[str]
) -> None:
    problem = build_problem(_case(3, 5, 1), ALLOCATE)
    start = _start(problem)
    tiers = exchange_module.trading_tiers(problem, start)
    assert tiers
    gangs = sorted(g.index for g in problem.gangs)
    names: dict[frozenset[int], str] = {}

    def offered(kind: str, count: int) -> list[frozenset[int]]:
        # Each a distinct drop, so that none is taken for another already tried.
        out = [frozenset({gangs[0], -1 - i - (100 if kind == "step" else 0)}) for i in range(count)]
        names.update({drop: f"{kind}-{i}" for i, drop in enumerate(out)})
        return out

    slope_drops, step_drops = offered("slope", slopes), offered("step", steps)
    first = frozenset({gangs[-1]})

    def slope_looks(problem: Any, best: Any, tier: int, queue: str, top: int, first_: Any) -> list[SlopeTrade]:
        return [SlopeTrade(size, drop, first) for size, drop in enumerate(slope_drops) if tier == tiers[0]]

    def step_looks(problem: Any, best: Any, tier: int, *args: Any, **kwargs: Any) -> list[StepTrade]:
        if kwargs.get("spare_only") or (len(args) > 2 and args[2]) or tier != tiers[0]:
            return []
        return [StepTrade("q1", "q2", 1, drop, first) for drop in step_drops]

    made: list[str] = []

    def refused(problem: Any, rank: Any, best: Any, best_rank: Any, drop: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(names[frozenset(drop)])
        return best, best_rank

    monkeypatch.setattr(exchange_module, "_chain_trades", lambda problem, rank, best, best_rank, run: (best, best_rank))
    monkeypatch.setattr(
        exchange_module, "_clearing_trades", lambda problem, rank, best, best_rank, *a: (best, best_rank)
    )
    monkeypatch.setattr(exchange_module, "slope_trades", slope_looks)
    monkeypatch.setattr(exchange_module, "step_trades", step_looks)
    monkeypatch.setattr(exchange_module, "_kept", refused)
    exchange_module.exchange(problem, start, _levels, [], None, tiers[:1])
    # The slope trades' second pass, after the others, tries its own again on the same decision:
    # only the first pass's order is this module's.
    assert made[: len(tried)] == tried


# (q1's running GPUs, q2's placed 1-GPU pods, whether the giving queue loses nothing)
ONE_TRADE = [
    (3, 5, True),  # a GPU beyond q2's share: the spare-only step trade makes it
    (1, 4, False),  # q2 at its share loses a step; q1, on a steeper piece, gains more
    (3, 6, True),  # two beyond: the same
    (2, 4, False),  # the same, q1 nearer its share
]


@pytest.mark.parametrize(("held", "give", "spare"), ONE_TRADE)
def test_with_one_trade_allowed_the_step_trade_is_the_one_made(held: int, give: int, spare: bool) -> None:
    problem = build_problem(_case(held, give, 1), ALLOCATE)
    start = _start(problem)
    tiers = exchange_module.trading_tiers(problem, start)
    offered_spare = any(exchange_module.step_trades(problem, start, tier, [], spare_only=True) for tier in tiers[:1])
    assert offered_spare is spare
    traded = exchange_module.exchange(problem, start, _levels, [], [], tiers, go=_one_trade())
    want = _key(problem, "ns/want-0")
    assert want in traded.placed
    assert _levels(problem, traded) > _levels(problem, start)
    after, before = fair_share_values(problem, traded), fair_share_values(problem, start)
    order = sorted(before)
    assert [after[t] for t in order] > [before[t] for t in order]  # a tier rose with the one trade
