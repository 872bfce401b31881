"""The chain looks' shared reads, and the exchange's looks asked of the deadline.

The chain looks on one decision (per tier, per queue, the first look then the second with the
flatter queues' work) read what they have in common once: each queue's waiting gangs at a tier,
walked over the queue's own candidates (:func:`vcsat.solver.search.chain.queued`) and kept with
the decision's layout, the nodes with room for each shape, each node's GPU-holding gangs
(:class:`vcsat.solver.search.chain.Layout`). And every look asks the cycle's deadline first
(:meth:`vcsat.solver.deadline.WallPlan.allows_look`).

- A table of clusters (``test_chain_flatter``'s six and the contended shape in miniature at six
  seeds): every look on the start decision, in the exchange's order, reading one layout made with
  the per-queue index offers what the same look made afresh offers (its own layout, the waiting
  gangs walked over every candidate, the nodes with room found again) and what the look offered
  before its reads were shared (``chain_reference``, main ``9e5da94``'s module); the layout's kept reads are
  what the looks computed before (each node's GPU-holding gangs as the set they made, each (tier,
  queue)'s waiting gangs as :func:`~vcsat.solver.search.chain.waiting_counted` over every
  candidate), and the second look read what the first made.
- A Hypothesis property: the same equality on ``test_chain_flatter``'s clusters as drawn.
- The looks' deadline: a table of :meth:`~vcsat.solver.deadline.WallPlan.allows_look` on a fake
  clock (no deadline; time for the first look, predicted by size; too little; past; predicted at
  the dearest look measured); and an exchange whose clock passes the deadline during a look starts
  no look after it, makes no trade and records the cut.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import chain_reference
import pytest
from hypothesis import HealthCheck, given, settings
from shape_files import shape_problem
from test_chain_flatter import CASES, CLUSTERS, _case, _start
from test_deadline import FakeClock
from test_gap_bound import ALLOCATE

from vcsat.solver.assignment import Assignment
from vcsat.solver.deadline import WallPlan, trades_cut
from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.fairness import fair_ranks, fair_terms
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.chain import Layout, chains, queued, waiting_counted

_levels = importlib.import_module("vcsat.solver.solve")._lexicographic


def _looks(problem: Problem, start: Assignment) -> tuple[int, Layout]:
    """Every chain look on ``start`` in the exchange's order, each given one shared layout and
    each made afresh, compared; how many looks, and the shared layout."""
    shared = Layout.of(problem, start, queued(problem))
    looks = 0
    top = max(g.rank for g in problem.gangs) + 1
    for tier in fair_ranks(problem):
        spare = exchange_module._not_needed(problem, start, top, upto=tier)
        for queue, *_ in exchange_module._raisable(problem, start, tier):
            for flatter in (False, True):
                given_it = list(chains(problem, start, tier, queue, spare, flatter=flatter, layout=lambda: shared))
                assert given_it == list(chains(problem, start, tier, queue, spare, flatter=flatter))
                before = chain_reference.chains(problem, start, tier, queue, spare, flatter=flatter)
                assert [(c.first, c.movers, c.victims) for c in given_it] == [
                    (c.first, c.movers, c.victims) for c in before
                ]
                looks += 1
    return looks, shared


def _as_computed_before(problem: Problem, start: Assignment, layout: Layout) -> None:
    """The layout's kept reads against what each look computed for itself before they were shared."""
    for node, there in layout.on_node.items():
        assert layout.holding.get(node, []) == sorted({g for g, _s, _k in there if layout.largest.get(g, 0) > 0})
    for (tier, queue), waiting in layout.waiting.items():
        counted = {c for q, _n, _d, _h, asked in fair_terms(problem, tier) if q == queue for c in asked}
        assert waiting == waiting_counted(problem, start, queue, counted)


@pytest.mark.parametrize(("prio", "wish", "run3", "small", "_placed"), CASES)
def test_looks_reading_one_layout_offer_what_looks_made_afresh_do(
    prio: int, wish: bool, run3: int, small: int, _placed: bool
) -> None:
    problem = build_problem(_case(prio, wish, run3, small), ALLOCATE)
    start = _start(problem, small)
    looks, shared = _looks(problem, start)
    _as_computed_before(problem, start, shared)
    assert looks >= 2, "the case has a first and a second look"
    assert shared.waiting, "the looks read the kept waiting gangs"


@pytest.mark.parametrize("seed", [1, 3, 5, 7, 19, 23])
def test_on_the_contended_shape_in_miniature_too(tmp_path: Path, seed: int) -> None:
    problem = shape_problem(tmp_path, "contended", 80, seed)
    start = greedy(problem)
    looks, shared = _looks(problem, start)
    _as_computed_before(problem, start, shared)
    assert looks >= 2 and shared.waiting


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CLUSTERS)
def test_shared_reads_never_change_a_look(
    prio: int, wish: bool, run3: int, small: int, weights: tuple[int, int, int]
) -> None:
    problem = build_problem(_case(prio, wish, run3, small, weights), ALLOCATE)
    start = _start(problem, small)
    _, shared = _looks(problem, start)
    _as_computed_before(problem, start, shared)


# (seconds to the deadline, or None; CPU seconds of a look measured before asking; whether the
# next look may start). 1,000 nodes: reserve 0.2 s, the first look predicted at 0.025 s.
ASKED = [
    (None, 0.0, True),  # no deadline (wall=False): every look
    (1.0, 0.0, True),  # 0.8 s left, a look of 0.025
    (0.21, 0.0, False),  # 0.01 s left: less than the first look's prediction
    (-0.5, 0.0, False),  # past the deadline
    (0.7, 0.3, False),  # after a look of 0.3 s: 0.2 left, the next predicted at 0.3
    (0.9, 0.3, True),  # 0.4 left
]


@pytest.mark.parametrize(("deadline_in", "measured", "allowed"), ASKED)
def test_a_look_starts_only_where_it_ends_in_time(deadline_in: float | None, measured: float, allowed: bool) -> None:
    clock = FakeClock()
    plan = WallPlan(None if deadline_in is None else clock.wall + deadline_in, 1000, now=clock.now, cpu=clock.cpu)
    if measured:
        with plan.not_a_trade():
            clock.wall += measured
            clock.cpu_seconds += measured
        assert plan.look_cpu == pytest.approx(measured)
    assert plan.allows_look() is allowed
    assert plan.out_of_time is not allowed
    assert plan.skipped == ([] if allowed else [trades_cut(0)])


# pure_only: swaps the exchange's _raisable and chains, which the compiled exchange calls bound.
@pytest.mark.pure_only
def test_no_look_starts_after_the_deadline_passes_in_the_exchange(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table's first cluster, where the second look finds the chain: the clock passes the
    deadline while the first tier's raisable queues are read (a look), so no chain look starts,
    no trade is made, and the cut is recorded at 0 trades."""
    problem = build_problem(_case(*CASES[0][:4]), ALLOCATE)
    start = _start(problem, CASES[0][3])
    clock = FakeClock()
    plan = WallPlan(clock.wall + 1.0, len(problem.nodes), now=clock.now, cpu=clock.cpu)
    raisable = exchange_module._raisable

    def slow(*args: Any) -> Any:
        clock.wall += 2.0
        clock.cpu_seconds += 2.0
        return raisable(*args)

    started: list[float] = []
    real = exchange_module.chains

    def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(clock.wall)
        return real(*args, **kwargs)

    monkeypatch.setattr(exchange_module, "_raisable", slow)
    monkeypatch.setattr(exchange_module, "chains", counting)
    tiers = exchange_module.trading_tiers(problem, start)
    assert tiers
    out = exchange_module.exchange(
        problem, start, _levels, [], None, tiers, go=plan.allows_trade, look=plan.not_a_trade, may_look=plan.allows_look
    )
    assert started == []
    assert out is start
    assert plan.skipped == [trades_cut(0)] and plan.out_of_time and plan.trades == 0


def test_with_time_the_same_exchange_finds_the_chain() -> None:
    """The control: with time to spare the same exchange looks and keeps the chain's trade."""
    problem = build_problem(_case(*CASES[0][:4]), ALLOCATE)
    start = _start(problem, CASES[0][3])
    clock = FakeClock()
    plan = WallPlan(clock.wall + 1000.0, len(problem.nodes), now=clock.now, cpu=clock.cpu)
    tiers = exchange_module.trading_tiers(problem, start)
    out = exchange_module.exchange(
        problem, start, _levels, [], None, tiers, go=plan.allows_trade, look=plan.not_a_trade, may_look=plan.allows_look
    )
    assert out is not start and plan.trades >= 1 and not plan.out_of_time
