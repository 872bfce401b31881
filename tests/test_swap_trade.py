"""The swap trade (:mod:`vcsat.solver.search.swap_trade`): a waiting top-priority gang placed in the
GPUs of a lower-ranked gang whose queue refills its share with other work.

A table of small clusters: three nodes of 8 GPUs and 64 CPUs. q1 (a GPU queue at its deserved
share) runs 8 GPUs on ``n0`` and on ``n2`` and waits with ``top``, one priority-1000 pod of 2 GPUs
and 1 CPU. q2 (a CPU queue, far below its deserved CPU share) runs 6 GPUs and ``r2_cpu`` CPUs on
``n1`` and waits with ``low`` (priority 0, 2 GPUs, 8 CPUs: created first, it takes ``n1``'s last
two GPUs in the greedy's fair fill) and with plenty of 4-CPU pods (the refill). Every fair-share
level needs ``low`` (q2 is below its share), and no pod on ``n1`` is smaller than ``top``'s, so
neither the trades across ranks nor the move trade take it out: main's exchange leaves ``top``
waiting. The swap trade takes ``low`` out and places ``top``; with ``r2_cpu`` 19, the 8 CPUs ``low``
frees and the CPU ``n1`` had left over give q2 two 4-CPU pods back (its share stays: placed work at
1000 rises, kept); with 20, one CPU short, q2's share would fall and the decision stays as it is.
"""

from __future__ import annotations

from typing import Any

import pytest
from builders import gangs, node, queue, snapshot
from test_gap_bound import ALLOCATE
from trade_checks import placed_on

from vcsat.model import Snapshot
from vcsat.solver import check, solve
from vcsat.solver.deadline import SEARCH
from vcsat.solver.problem import build_problem
from vcsat.solver.search.swap_trade import MAX_SWAP_LOOKS, swaps


def _case(r2_cpu: int, *, top: bool = True) -> Snapshot:
    """The module docstring's cluster; without ``top`` when not ``top``."""
    nodes = [node(f"n{i}", cpu=64, memory="512Gi", gpus=8) for i in range(3)]
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("r1a", 1, dict(queue="q1", node="n0", gpus=8, priority=1000, created=-100, cpu="1")),
        ("r1b", 1, dict(queue="q1", node="n2", gpus=8, priority=1000, created=-100, cpu="1")),
        ("r2", 1, dict(queue="q2", node="n1", gpus=6, created=-100, cpu=str(r2_cpu))),
        ("low", 1, dict(queue="q2", priority=0, gpus=2, cpu="8", created=1)),
        ("cpu", 60, dict(queue="q2", priority=0, cpu="4", created=2)),
        ("top", 1 if top else 0, dict(queue="q1", priority=1000, gpus=2, cpu="1", created=100)),
    ]:
        if count:
            p, g = gangs(prefix, count, **kwargs)
            pods += p
            groups += g
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=[queue("q1"), queue("q2")])


def _replay(snap: Snapshot, trades: int) -> Any:
    return solve(snap, ALLOCATE, wall=False, skip=frozenset({SEARCH, f"exchange_trades={trades}"}))


def _placed(decision: Any, prefix: str) -> int:
    return sum(1 for b in decision.bindings if b.pod.startswith(f"ns/{prefix}-"))


# (CPUs q2 runs on n1, whether the swap places ``top``)
CASES = [
    (19, True),  # low's CPUs and n1's leftover CPU refill q2 with two 4-CPU pods: its share stays
    (20, False),  # one CPU short: q2 would lose 4 CPUs of its share, a tier falls, not kept
]


@pytest.mark.parametrize(("r2_cpu", "placed"), CASES)
def test_the_swap_trade_places_a_top_priority_gang_in_a_lower_gangs_gpus(r2_cpu: int, placed: bool) -> None:
    snap = _case(r2_cpu)
    start = _replay(snap, 0)
    assert _placed(start, "top") == 0 and _placed(start, "low") == 1  # the greedy's decision
    traded = _replay(snap, 2)
    assert check(snap, traded, ALLOCATE) == []
    before = [level.value for level in start.solver.levels]
    after = [level.value for level in traded.solver.levels]
    if placed:
        assert _placed(traded, "top") == 1
        assert _placed(traded, "low") == 0
        assert _placed(traded, "cpu") == _placed(start, "cpu") + 2
        fair = [i for i, level in enumerate(start.solver.levels) if "fair share" in level.level]
        assert fair and [after[i] for i in fair] == [before[i] for i in fair]  # every tier stays
        assert after > before
    else:
        assert after == before
        assert {b.pod for b in traded.bindings} == {b.pod for b in start.bindings}
    # A replay of the same count decides the same (the exchange's trades are a fixed order).
    assert {(b.pod, b.node) for b in _replay(snap, 2).bindings} == {(b.pod, b.node) for b in traded.bindings}


def test_the_swap_trade_offers_the_fewest_gpus_that_suffice_and_nothing_without_a_waiting_gang() -> None:
    problem = build_problem(_case(19), ALLOCATE)
    keys = {gang.key: gang.index for gang in problem.gangs}
    where = {"ns/low-0": "n1"}
    decision = placed_on(problem, where)
    assert list(swaps(problem, decision, set())) == [(keys["ns/top-0"], [keys["ns/low-0"]])]
    tried: set[tuple[object, ...]] = set()
    assert len(list(swaps(problem, decision, tried))) == 1
    assert list(swaps(problem, decision, tried)) == []  # a kind tried on the decision is not again
    assert MAX_SWAP_LOOKS >= 1
    # No waiting gang ranked above a placed one: nothing to offer, and the exchange changes nothing.
    problem = build_problem(_case(19, top=False), ALLOCATE)
    assert list(swaps(problem, placed_on(problem, where), set())) == []
    snap = _case(19, top=False)
    assert {b.pod for b in _replay(snap, 8).bindings} == {b.pod for b in _replay(snap, 0).bindings}
