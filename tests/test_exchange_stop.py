"""The exchange reads nothing more once a trade is refused.

Why: on a short limit the first refused trade ends the exchange (no trade after it runs), and
what follows it in the cycle (decode, explanations, the validator) needs the time; a list of
trades or a per-tier read made after the refusal could only be thrown away. Checked by watching
the exchange module's looks and reads: none may start once ``go`` has refused, whatever the
cluster and wherever the cut falls, and the cut exchange decides as before (its trades the first
``k`` of the whole exchange's, :mod:`tests.test_exchange`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_exchange import _fair_case, _keys, _levels
from test_gap_bound import ALLOCATE, FREE_GPUS, cluster, running_pods, waiting_jobs
from test_top_up import _without
from trade_checks import placed_on

from vcsat.solver.greedy import greedy
from vcsat.solver.problem import build_problem
from vcsat.solver.search.exchange import exchange, trading_queues, trading_ranks, trading_tiers

_exchange_module = importlib.import_module("vcsat.solver.search.exchange")

WATCHED = (
    "chains",
    "step_trades",
    "slope_trades",
    "_move_looks",
    "_raisable",
    "_not_needed",
    "_on_whole",
    "_small_on_whole",
    "_below_on_whole",
    "trading_queues",
    "trading_ranks",
    "_tiers_still",
    "relocations",
)
"""The exchange module's looks and reads that only a trade after them uses."""


class _Refusing:
    """A ``go`` that lets ``k`` trades start, then refuses, remembering that it did."""

    def __init__(self, k: int) -> None:
        self.k, self.asked, self.refused = k, 0, False

    def __call__(self) -> bool:
        self.asked += 1
        if self.asked > self.k:
            self.refused = True
        return not self.refused


def _watch(monkeypatch: pytest.MonkeyPatch, go: _Refusing) -> list[str]:
    """Wrap :data:`WATCHED` so that each call made after ``go`` refused is recorded by name."""
    late: list[str] = []

    def wrap(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if go.refused:
                late.append(name)
            return function(*args, **kwargs)

        return wrapper

    for name in WATCHED:
        monkeypatch.setattr(_exchange_module, name, wrap(name, getattr(_exchange_module, name)))
    return late


# (trades let start before the refusal): the fair case with q1's two small pods placed and q3's
# 8-GPU pod waiting; its first trade places q3's pod, so later cuts meet no refusal at all
CUTS = [0, 1, 2]


@pytest.mark.parametrize("k", CUTS)
def test_nothing_is_read_after_the_refused_trade(k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = build_problem(_fair_case("q1", 8), ALLOCATE)
    small = _keys(problem, "small")
    start = placed_on(problem, {small[0]: "n0", small[1]: "n1"})
    tiers = trading_tiers(problem, start)
    assert tiers
    go = _Refusing(k)
    with monkeypatch.context() as patch:
        late = _watch(patch, go)
        cut = exchange(problem, start, _levels, [], [], tiers, go=go)
    assert late == []
    assert go.refused is (k == 0)
    assert (_levels(problem, cut) > _levels(problem, start)) is (k > 0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    free=FREE_GPUS,
    running=running_pods(max_size=6, gpus=[1, 2, 4, 8]),
    waiting=waiting_jobs(5, pods=(1, 2), gpus=(1, 2, 8), count=(1, 6)),
    dropped=st.lists(st.booleans(), min_size=40, max_size=40),
    k=st.integers(min_value=0, max_value=6),
)
# A slope trade kept, then the step trades after it refused: the sizes left were made again.
@example(
    free=[0, 0],
    running=[],
    waiting=[("q1", -100, 1, 1, 1), ("q1", -100, 1, 1, 6), ("q1", 0, 2, 8, 1), ("q2", 0, 1, 2, 6)],
    dropped=[False] * 40,
    k=3,
)
# A clearing trade refused: the next tier's queues were read.
@example(
    free=[0, 0, 0],
    running=[],
    waiting=[
        ("q1", -100, 1, 1, 1),
        ("q1", -100, 1, 8, 5),
        ("q3", -100, 1, 1, 4),
        ("q3", 0, 1, 8, 3),
        ("q2", -100, 1, 1, 4),
    ],
    dropped=[g == 16 for g in range(40)],
    k=2,
)
def test_no_look_or_read_starts_once_a_trade_is_refused(
    free: list[int],
    running: list[tuple[str, int, int]],
    waiting: list[tuple[str, int, int, int, int]],
    dropped: list[bool],
    k: int,
) -> None:
    snap = cluster(free, running, waiting)
    problem = build_problem(snap, ALLOCATE)
    first = greedy(problem)
    short = _without(problem, first, {g for g in first.placed if dropped[g % len(dropped)]})
    queues, ranks, tiers = trading_queues(problem, short), trading_ranks(problem, short), trading_tiers(problem, short)
    go = _Refusing(k)
    with pytest.MonkeyPatch.context() as patch:
        late = _watch(patch, go)
        cut = exchange(problem, short, _levels, queues, ranks, tiers, go=go)
    assert late == []
    assert _levels(problem, cut) >= _levels(problem, short)
