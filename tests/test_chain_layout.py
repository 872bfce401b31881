"""The chain looks read one layout per decision (`vcsat.solver.search.chain.Layout`).

The exchange makes a decision's layout (room left, pods per node and per gang, each gang's largest
pod) once and every chain look on that decision reads it; after a kept trade the next decision's is
made. These tests hold that to the looks made afresh: the same trades offered, the same decision
kept, on the small clusters of ``test_chain_flatter`` and ``test_chain_trade``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from test_chain_flatter import CASES, CLUSTERS, _case, _levels, _start
from test_gap_bound import ALLOCATE

from vcsat.solver.problem import build_problem
from vcsat.solver.search import chain as chain_module
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.chain import Layout, chains
from vcsat.solver.search.exchange import trading_tiers


def _afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every look makes its own layout (the looks as they were before the layout was shared)."""
    real = chain_module.chains

    def fresh(*args: Any, layout: Any = None, **kwargs: Any) -> Any:
        return real(*args, **kwargs)

    monkeypatch.setattr(exchange_module, "chains", fresh)


def _chain_trades(problem: Any, start: Any) -> tuple[Any, tuple[int, ...]]:
    return exchange_module._chain_trades(
        problem, _levels, start, _levels(problem, start), exchange_module._Run(problem, lambda: True)
    )


@pytest.mark.parametrize(("prio", "wish", "run3", "small", "placed"), CASES)
@pytest.mark.parametrize("flatter", [False, True])
def test_a_look_given_the_layout_offers_what_a_look_made_afresh_does(
    prio: int, wish: bool, run3: int, small: int, placed: bool, flatter: bool
) -> None:
    problem = build_problem(_case(prio, wish, run3, small), ALLOCATE)
    start = _start(problem, small)
    made: list[Layout] = []

    def layout() -> Layout:
        made.append(Layout.of(problem, start))
        return made[-1]

    for tier in trading_tiers(problem, start):
        spare = exchange_module._not_needed(problem, start, 1001, upto=tier)
        for queue in ("q1", "q2", "q3"):
            given_it = list(chains(problem, start, tier, queue, spare, flatter=flatter, layout=layout))
            assert given_it == list(chains(problem, start, tier, queue, spare, flatter=flatter))


def test_the_layout_is_the_decisions_own() -> None:
    problem = build_problem(_case(500, True, 4, 2), ALLOCATE)
    start = _start(problem, 2)
    layout = Layout.of(problem, start)
    placed = {g for (g, _s, _n), k in start.gang_slots.items() if k > 0}
    assert set(layout.of_gang) == placed
    assert sorted(layout.on_node) == sorted({n for (_g, _s, n), k in start.gang_slots.items() if k > 0})
    assert layout.base == problem.room_left(start.shape_slots)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CLUSTERS)
def test_the_chain_trades_with_one_layout_a_decision_keep_what_fresh_looks_keep(
    prio: int, wish: bool, run3: int, small: int, weights: tuple[int, int, int]
) -> None:
    problem = build_problem(_case(prio, wish, run3, small, weights), ALLOCATE)
    start = _start(problem, small)
    shared, shared_rank = _chain_trades(problem, start)
    with pytest.MonkeyPatch.context() as patch:
        _afresh(patch)
        fresh, fresh_rank = _chain_trades(problem, start)
    assert shared_rank == fresh_rank
    assert shared.gang_slots == fresh.gang_slots


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(**CLUSTERS)
def test_every_look_reads_the_layout_of_the_decision_it_looks_at(
    prio: int, wish: bool, run3: int, small: int, weights: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = build_problem(_case(prio, wish, run3, small, weights), ALLOCATE)
    start = _start(problem, small)
    real = chain_module.chains

    def reading(problem: Any, assignment: Any, *args: Any, layout: Any = None, **kwargs: Any) -> Any:
        assert layout is not None
        given_it = layout()
        assert given_it.of_gang == Layout.of(problem, assignment).of_gang
        assert given_it.base == problem.room_left(assignment.shape_slots)
        return real(problem, assignment, *args, layout=layout, **kwargs)

    monkeypatch.setattr(exchange_module, "chains", reading)
    _chain_trades(problem, start)
