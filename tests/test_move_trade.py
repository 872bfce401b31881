"""The move trade (:mod:`vcsat.solver.search.relocation`, :func:`moves`): a waiting top-priority
gang of a queue above its deserved share gets a whole node by moving the pods on it elsewhere.

- A table of small clusters: three 8-GPU nodes, ``n2`` full with q1's running priority-1000 pods
  (q1 above its deserved share: q4, of weight 3, waits with three 8-GPU pods that no three nodes
  take), ``n1`` running ``busy`` GPUs of q3's; pending: q2's priority-1000 1-GPU pod ``mover`` (on
  ``n0`` in the decision the trade starts from), q3's priority-0 1-GPU pod ``low`` (on ``n1`` when
  it has room) and q1's priority-1000 8-GPU pod ``whole``, waiting. The move trade moves the mover
  to ``n1``'s free GPU, or to the GPU ``low`` holds there, taking ``low`` out where no fair-share
  level needs it (q3 of weight 1, above its deserved share), and places ``whole`` on ``n0``. It
  must not where the mover finds no room elsewhere, or only room that a queue at its deserved
  share holds (q3 of weight 10: a tier would fall). (The exchange's other trades take the mover
  out too, on so small a cluster, and their refill finds the same; on the generated ones it does
  not: benchmarks/RESULTS.md, session 32. The table runs the move trades alone.)
- A Hypothesis property over such clusters with random room, holders and movers: the move trades
  alone and the whole exchange rank at least as high as the decision they start from (strictly,
  where they change it), keeps every node's room and every gang
  whole or nothing, and the cycle from that start decides something the validator accepts.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from builders import gangs, node, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gap_bound import ALLOCATE
from trade_checks import assert_a_kept_trade, placed_on

from vcsat.model import Snapshot
from vcsat.solver import check, solve
from vcsat.solver.deadline import SEARCH, SECOND_FILL
from vcsat.solver.problem import build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.exchange import exchange, trading_queues, trading_ranks, trading_tiers
from vcsat.solver.search.relocation import moves

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic


def _case(busy: int, q3_weight: int, *, low: bool = True, movers: int = 1) -> Snapshot:
    """The module docstring's cluster: ``n1`` runs ``busy`` of q3's GPUs; q3 of weight
    ``q3_weight``."""
    nodes = [node(f"n{i}", cpu=64, memory="512Gi", gpus=8) for i in range(3)]
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("run", 1, dict(queue="q1", node="n2", gpus=8, priority=1000, created=-100)),
        ("busy", 1 if busy else 0, dict(queue="q3", node="n1", gpus=busy, created=-100)),
        ("mover", movers, dict(queue="q2", priority=1000, gpus=1, created=1)),
        ("low", 1 if low else 0, dict(queue="q3", priority=0, gpus=1, created=2)),
        ("whole", 1, dict(queue="q1", priority=1000, gpus=8, created=3)),
        ("far", 1, dict(queue="q4", priority=0, gpus=8, size=3, created=4)),
    ]:
        if count:
            p, g = gangs(prefix, count, **{"cpu": "1", **kwargs})
            pods += p
            groups += g
    queues = [queue("q1"), queue("q2"), queue("q3", weight=q3_weight), queue("q4", weight=3)]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _start(problem: Any, busy: int, *, low: bool = True, movers: int = 1) -> Any:
    """The decision the trade starts from: the movers on ``n0``, ``low`` on ``n1`` when it has room."""
    where = {f"ns/mover-{i}": "n0" for i in range(movers)}
    if low and busy < 8:
        where["ns/low-0"] = "n1"
    return placed_on(problem, where)


def _key(problem: Any, key: str) -> int:
    return next(g.index for g in problem.gangs if g.key == key)


def _trades(problem: Any, start: Any) -> tuple[list[tuple[str, int]], list[int], list[int]]:
    return trading_queues(problem, start), trading_ranks(problem, start), trading_tiers(problem, start)


class _Looks:
    """The exchange's ``go`` and ``look``: counts the looks and the trades asked inside one."""

    def __init__(self) -> None:
        self.entered = self.asked = self.asked_inside = 0
        self._inside = False

    def go(self) -> bool:
        self.asked += 1
        self.asked_inside += self._inside
        return True

    @contextmanager
    def look(self) -> Iterator[None]:
        self.entered += 1
        self._inside = True
        try:
            yield
        finally:
            self._inside = False


# (GPUs q3 runs on n1, q3's weight, whether the move trade places ``whole``, whether it takes
# ``low`` out to make room for the mover)
CASES = [
    (6, 1, True, False),  # n1 has a free GPU: the mover goes there
    (6, 10, True, False),  # the same, q3 at its share: nothing of it moves
    (7, 1, True, True),  # n1's last GPU is low's, q3 above its share: low out, the mover in
    (7, 10, False, False),  # the same, q3 at its share and low needed: a tier would fall
    (8, 1, False, False),  # n1 full before the cycle: no room for the mover anywhere
]


@pytest.mark.parametrize(("busy", "q3_weight", "placed", "ejected"), CASES)
def test_the_move_trade_moves_pods_off_a_whole_node_for_a_top_priority_gang(
    busy: int, q3_weight: int, placed: bool, ejected: bool
) -> None:
    snap = _case(busy, q3_weight)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem, busy)
    whole, mover, low = (_key(problem, k) for k in ("ns/whole-0", "ns/mover-0", "ns/low-0"))
    assert not trading_queues(problem, start)  # q1 waits with nothing lower placed
    assert all(
        queue != "q1"
        for tier in trading_tiers(problem, start)
        for queue, *_ in exchange_module._raisable(problem, start, tier)
    )  # q1 is no tier's to raise
    spare = exchange_module._not_needed(problem, start, 1000)
    offered = [(t.gang, set(t.movers), set(t.victims)) for t in moves(problem, start, spare, set())]
    assert offered == ([(whole, {mover}, {low} if ejected else set())] if placed else [])
    before = _levels(problem, start)
    looks = _Looks()
    run = exchange_module._Run(problem, looks.go, looks.look)
    traded, rank = exchange_module._move_trades(problem, _levels, start, before, run)
    # The look is wrapped (the cycle leaves it out of the trades' pace); no trade is asked inside it.
    assert looks.entered >= 1
    assert looks.asked_inside == 0
    assert looks.asked == (1 if placed else 0)
    assert (whole in traded.placed) is placed
    assert rank == _levels(problem, traded)
    if placed:
        assert rank > before
        assert mover in traded.placed  # moved, not dropped
        assert (low in traded.placed) is not ejected
    else:
        assert traded is start


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    busy=st.integers(0, 8),
    q3_weight=st.sampled_from([1, 10]),
    low=st.booleans(),
    movers=st.integers(1, 4),
)
def test_move_trades_never_rank_lower_and_the_cycle_validates(
    busy: int, q3_weight: int, low: bool, movers: int
) -> None:
    snap = _case(busy, q3_weight, low=low, movers=movers)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem, busy, low=low, movers=movers)
    queues, ranks, tiers = _trades(problem, start)
    before = _levels(problem, start)
    moved, _ = exchange_module._move_trades(
        problem, _levels, start, before, exchange_module._Run(problem, lambda: True)
    )
    traded = exchange(problem, start, _levels, queues, ranks, tiers)
    for result in (moved, traded):
        assert_a_kept_trade(problem, start, result, _levels)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_solve_module, "greedy", lambda problem: _start(problem, busy, low=low, movers=movers))
        decision = solve(snap, ALLOCATE, wall=False, skip=(SEARCH, SECOND_FILL))
    assert check(snap, decision, ALLOCATE) == []
