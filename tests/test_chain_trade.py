"""The chain trade (:mod:`vcsat.solver.search.chain`): a whole-node pod moved off the one node a
below-share queue's large pod may use, into room freed elsewhere.

- A table of small clusters: four 8-GPU nodes, ``n0`` (``pool=narrow``) and ``n1`` of kind
  ``big``, ``n2`` full with q2's running work, ``n3`` with q3's (q3 above its deserved share: no
  tier needs its pending work; without it, q3 is at its share). q1 (weight 4: far below its
  deserved share) waits with a priority-500 8-GPU pod ``want`` that only ``n0`` takes; q2's
  priority-1000 8-GPU pod ``mover`` (any ``big`` node) is on ``n0`` in the decision the trade
  starts from; ``n1`` holds ``small`` 1-GPU pods of ``who`` (q1's own of priority 0, which the
  tier counting ``want`` does not count; q1's own of priority 500, which it does; or q3's
  priority-0 ones) and ``busy`` GPUs of q3's running work. The chain takes the small pods out,
  moves ``mover`` to ``n1`` and places ``want`` on ``n0``, where the tier rises; not where ``n1``
  cannot take the mover even then (no destination), nor where the small pods there count at a
  tier as important (q3 at its share, or q1's own of ``want``'s rank: a tier would fall). (On so
  small a cluster the exchange's other trades can find the same; the table runs the chain trades
  alone, as ``test_move_trade`` does the move's.)
- A Hypothesis property over such clusters: the chain trades alone and the whole exchange rank at
  least as high as the decision they start from (strictly, where they change it), keep every
  node's room and every gang whole or nothing, and the cycle from that start passes the validator.
"""

from __future__ import annotations

import importlib
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
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.problem import build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.chain import chains
from vcsat.solver.search.exchange import exchange, trading_queues, trading_ranks, trading_tiers

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic


def _case(small: int, who: str, busy: int = 0) -> Snapshot:
    """The module docstring's cluster: ``n1`` holds ``small`` 1-GPU pods of ``who`` and ``busy``
    GPUs of q3's running work."""
    nodes = [
        node("n0", cpu=64, memory="512Gi", gpus=8, labels={"kind": "big", "pool": "narrow"}),
        node("n1", cpu=64, memory="512Gi", gpus=8, labels={"kind": "big"}),
        node("n2", cpu=64, memory="512Gi", gpus=8, labels={"kind": "other"}),
        node("n3", cpu=64, memory="512Gi", gpus=8, labels={"kind": "other"}),
    ]
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("run", 1, dict(queue="q2", node="n2", gpus=8, priority=1000, created=-100)),
        ("held", 0 if who == "q3 needed" else 1, dict(queue="q3", node="n3", gpus=8, created=-100)),
        ("busy", 1 if busy else 0, dict(queue="q3", node="n1", gpus=busy, created=-100)),
        ("mover", 1, dict(queue="q2", priority=1000, gpus=8, selector={"kind": "big"}, created=1)),
        ("small", small, dict(queue=who[:2], priority=500 if who == "q1 same" else 0, gpus=1, created=2)),
        ("want", 1, dict(queue="q1", priority=500, gpus=8, selector={"pool": "narrow"}, created=3)),
    ]:
        if count:
            p, g = gangs(prefix, count, **{"cpu": "1", **kwargs})
            pods += p
            groups += g
    queues = [queue("q1", weight=4), queue("q2", weight=2), queue("q3")]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _start(problem: Any, small: int) -> Any:
    """The decision the trade starts from: ``mover`` on ``n0``, the small pods on ``n1``."""
    where = {"ns/mover-0": "n0", **{f"ns/small-{i}": "n1" for i in range(small)}}
    return placed_on(problem, where)


def _key(problem: Any, key: str) -> int:
    return next(g.index for g in problem.gangs if g.key == key)


# (small pods on n1, whose, q3's running GPUs on n1, whether the chain places ``want``)
CASES = [
    (0, "q1", 0, True),  # n1 free: the mover goes there
    (4, "q1", 0, True),  # q1's own 4 lower-ranked small pods out (not counted at want's tier)
    (8, "q1", 0, True),  # the same, 8 of them: the tier counting want rises, the next stays
    (8, "q3", 0, True),  # q3's small pods, which no tier needs (q3 above its share), out
    (7, "q3", 0, True),  # the same with a GPU free
    (0, "q1", 1, False),  # n1 has 7 GPUs before the cycle: no destination for the mover
    (8, "q3 needed", 0, False),  # q3 at its share needs its small pods: a tier would fall
    (8, "q1 same", 0, False),  # q1's own small pods of want's rank: counted with it, not taken out
]

PATIENT = {(8, "q3 needed", 0)}
"""The cases of :data:`CASES` where the first look offers nothing but the chain trades place
``want`` all the same: the fourth look (``patient``) counts q3's small pods, which fit back on the
empty ``n3``, and the tier, read with them put back, rises."""


@pytest.mark.parametrize(("small", "who", "busy", "placed"), CASES)
def test_the_chain_moves_a_whole_node_pod_off_the_narrow_pool_and_raises_the_tier(
    small: int, who: str, busy: int, placed: bool
) -> None:
    snap = _case(small, who, busy)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem, small)
    want, mover = _key(problem, "ns/want-0"), _key(problem, "ns/mover-0")
    offered = [
        (set(trade.first), set(trade.movers))
        for tier in trading_tiers(problem, start)
        for trade in chains(problem, start, tier, "q1", exchange_module._not_needed(problem, start, 1001, upto=tier))
    ]
    assert offered[:1] == ([({want}, {mover})] if placed else [])
    before = _levels(problem, start)
    run = exchange_module._Run(problem, lambda: True)
    traded, rank = exchange_module._chain_trades(problem, _levels, start, before, run)
    assert rank == _levels(problem, traded)
    chained = placed or (small, who, busy) in PATIENT
    assert (want in traded.placed) is chained
    if chained:
        assert rank > before
        assert mover in traded.placed  # moved, not dropped
        tiers = sorted(fair_share_values(problem, start))
        after, first = fair_share_values(problem, traded), fair_share_values(problem, start)
        assert [after[t] for t in tiers] > [first[t] for t in tiers]  # a tier rose
        node_of = {n.name: i for i, n in enumerate(problem.nodes)}
        assert any(g == mover and n == node_of["n1"] for (g, _s, n), k in traded.gang_slots.items() if k)
    else:
        assert traded is start


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    small=st.integers(0, 8),
    who=st.sampled_from(["q1", "q1 same", "q3", "q3 needed"]),
    busy=st.integers(0, 8),
)
def test_chain_trades_never_rank_lower_and_the_cycle_validates(small: int, who: str, busy: int) -> None:
    small = min(small, 8 - busy)
    snap = _case(small, who, busy)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem, small)
    queues, ranks, tiers = trading_queues(problem, start), trading_ranks(problem, start), trading_tiers(problem, start)
    before = _levels(problem, start)
    chained, _ = exchange_module._chain_trades(
        problem, _levels, start, before, exchange_module._Run(problem, lambda: True)
    )
    traded = exchange(problem, start, _levels, queues, ranks, tiers)
    for result in (chained, traded):
        assert_a_kept_trade(problem, start, result, _levels)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_solve_module, "greedy", lambda problem: _start(problem, small))
        decision = solve(snap, ALLOCATE, wall=False, skip=(SEARCH, SECOND_FILL))
    assert check(snap, decision, ALLOCATE) == []


_GANG = st.tuples(
    st.sampled_from(["q1", "q2", "q3"]),
    st.sampled_from([0, 500, 1000]),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([None, {"kind": "big"}, {"pool": "narrow"}]),
    st.integers(1, 2),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pending=st.lists(_GANG, min_size=2, max_size=9), weights=st.tuples(*[st.integers(1, 4)] * 3))
def test_chain_trades_on_random_clusters_never_rank_lower_and_keep_room(
    pending: list[tuple[str, int, int, dict[str, str] | None, int]], weights: tuple[int, int, int]
) -> None:
    """The same property from the greedy's decision on random clusters of four 8-GPU nodes (two
    ``big``, one of them the ``narrow`` pool) and random gangs of three queues."""
    labels = [{"kind": "big", "pool": "narrow"}, {"kind": "big"}, {"kind": "big"}, {"kind": "other"}]
    nodes = [node(f"n{i}", cpu=64, memory="512Gi", gpus=8, labels=labels[i]) for i in range(4)]
    pods: list[Any] = []
    groups: list[Any] = []
    for i, (q, priority, gpus, selector, size) in enumerate(pending):
        p, g = gangs(
            f"g{i}", 1, queue=q, priority=priority, gpus=gpus, selector=selector, size=size, created=i, cpu="1"
        )
        pods += p
        groups += g
    snap = snapshot(
        nodes=nodes, pods=pods, groups=groups, queues=[queue(f"q{i + 1}", weight=w) for i, w in enumerate(weights)]
    )
    problem = build_problem(snap, ALLOCATE)
    start = _solve_module.greedy(problem)
    before = _levels(problem, start)
    chained, rank = exchange_module._chain_trades(
        problem, _levels, start, before, exchange_module._Run(problem, lambda: True)
    )
    assert rank == _levels(problem, chained) >= before
    assert chained is start or rank > before
    left = problem.room_left(chained.shape_slots)
    assert all(amount >= 0 for row in left for amount in row)
    for gang in problem.gangs:
        counts = [chained.count.get(c, 0) for c in gang.classes]
        assert all(k == len(problem.classes[c].pods) for c, k in zip(gang.classes, counts, strict=True)) or not any(
            counts
        )
    decision = solve(snap, ALLOCATE, wall=False, skip=(SEARCH, SECOND_FILL))
    assert check(snap, decision, ALLOCATE) == []
