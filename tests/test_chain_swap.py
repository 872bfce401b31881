"""The chain trade's third look (:mod:`vcsat.solver.search.chain`, ``swap``): a queue at its share
gives up its placed work on the waiting pod's narrow pool where its own waiting gangs take its place.

- A table of small clusters: three 8-GPU nodes, ``n0`` (``kind=big``, ``pool=narrow``), ``n1`` and
  ``n2`` (``kind=other``); ``n2`` is full with q3's running work and ``n1`` holds ``run1`` GPUs of
  it. q2's priority-1000 8-GPU pod ``whole`` (``kind=big``: only ``n0``) is on ``n0`` in the
  decision the trade starts from, and q2 waits with ``back`` 1-GPU pods at ``rprio`` (any
  ``other`` node); q1 waits with a priority-500 8-GPU pod ``want`` that only ``n0`` takes. With
  equal weights q1 and q2 each deserve 8 GPUs: q2 is at its share, q1 holds nothing. The first
  look finds no chain (``whole`` ranks above ``want`` and has nowhere to move), nor does the
  second (q2 is flatter, but its work ranks above ``want``). The third takes ``whole`` out where
  q2's own ``back`` pods, counted at every level ``whole`` is, fit on ``n1`` and make up its
  8 GPUs: q1's tier rises, q2's stays. Not where they do not fit (``n1`` half held), are too few,
  are counted at no level ``whole`` is (priority 0: the tier of each queue's highest priority
  does not count them), or where q2 is below its share (a larger weight).
- A Hypothesis property over such clusters: the chain trades rank at least as high as the decision
  they start from (strictly, where they change it), keep every node's room and every gang whole or
  nothing, and the cycle from that start passes the validator.
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
from vcsat.solver.search.exchange import trading_tiers

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic


def _case(back: int, rprio: int, run1: int, weights: tuple[int, int, int] = (1, 1, 1)) -> Snapshot:
    """The module docstring's cluster."""
    nodes = [
        node("n0", cpu=64, memory="512Gi", gpus=8, labels={"kind": "big", "pool": "narrow"}),
        node("n1", cpu=64, memory="512Gi", gpus=8, labels={"kind": "other"}),
        node("n2", cpu=64, memory="512Gi", gpus=8, labels={"kind": "other"}),
    ]
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("run", 1, dict(queue="q3", node="n2", gpus=8, priority=0, created=-100)),
        ("held", 1 if run1 else 0, dict(queue="q3", node="n1", gpus=run1, priority=0, created=-100)),
        ("whole", 1, dict(queue="q2", priority=1000, gpus=8, selector={"kind": "big"}, created=1)),
        ("back", back, dict(queue="q2", priority=rprio, gpus=1, selector={"kind": "other"}, created=2)),
        ("want", 1, dict(queue="q1", priority=500, gpus=8, selector={"pool": "narrow"}, created=3)),
    ]:
        if count:
            p, g = gangs(prefix, count, **{"cpu": "1", **kwargs})
            pods += p
            groups += g
    queues = [queue(f"q{i + 1}", weight=w) for i, w in enumerate(weights)]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _start(problem: Any) -> Any:
    """The decision the trade starts from: ``whole`` on ``n0``, q2's ``back`` pods waiting."""
    return placed_on(problem, {"ns/whole-0": "n0"})


def _key(problem: Any, key: str) -> int:
    return next(g.index for g in problem.gangs if g.key == key)


# (q2's waiting 1-GPU pods, their priority, q3's running GPUs on n1, weights, whether ``want`` is placed)
CASES = [
    (8, 1000, 0, (1, 1, 1), True),  # q2's own pods of whole's rank fit on n1 and make up its share
    (10, 1000, 0, (1, 1, 1), True),  # more than enough: the same
    (8, 1000, 4, (1, 1, 1), False),  # n1 half held: only 4 fit, q2 would fall below its share
    (4, 1000, 0, (1, 1, 1), False),  # too few to make up 8 GPUs
    (8, 0, 0, (1, 1, 1), False),  # of priority 0: the tier counting whole (q2's highest) counts none
    (8, 1000, 0, (1, 4, 1), False),  # q2 below its share (deserves 16): not at it, no swap
]


@pytest.mark.parametrize(("back", "rprio", "run1", "weights", "placed"), CASES)
def test_the_third_look_swaps_an_at_share_queues_work_for_its_own_waiting(
    back: int, rprio: int, run1: int, weights: tuple[int, int, int], placed: bool
) -> None:
    snap = _case(back, rprio, run1, weights)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem)
    want, whole = _key(problem, "ns/want-0"), _key(problem, "ns/whole-0")
    tiers = trading_tiers(problem, start)

    def offered(**look: bool) -> list[tuple[set[int], set[int]]]:
        spare = {tier: exchange_module._not_needed(problem, start, 1001, upto=tier) for tier in tiers}
        return [
            (set(trade.first), set(trade.victims))
            for tier in tiers
            for trade in chains(problem, start, tier, "q1", spare[tier], **look)
        ]

    assert offered() == []  # neither look before it finds one: only the third can
    assert offered(flatter=True) == []
    assert offered(swap=True)[:1] == ([({want}, {whole})] if placed else [])
    before = _levels(problem, start)
    traded, rank = exchange_module._chain_trades(
        problem, _levels, start, before, exchange_module._Run(problem, lambda: True)
    )
    assert rank == _levels(problem, traded)
    assert (want in traded.placed) is placed
    if placed:
        assert rank > before
        assert whole not in traded.placed
        backs = {g.index for g in problem.gangs if g.key.startswith("ns/back-")}
        assert len(backs & traded.placed) >= 8  # q2's own waiting pods took its place
        after, first = fair_share_values(problem, traded), fair_share_values(problem, start)
        order = sorted(first)
        assert [after[t] for t in order] > [first[t] for t in order]  # a tier rose
    else:
        assert whole in traded.placed  # not given up (q2's own trades may still place its pods)


CLUSTERS = {
    "back": st.integers(0, 12),
    "rprio": st.sampled_from([0, 500, 1000]),
    "run1": st.integers(0, 8),
    "weights": st.tuples(*[st.integers(1, 4)] * 3),
}
"""The module docstring's clusters, as Hypothesis draws them (``_case``'s arguments)."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CLUSTERS)
def test_swap_looks_never_rank_lower_and_the_cycle_validates(
    back: int, rprio: int, run1: int, weights: tuple[int, int, int]
) -> None:
    snap = _case(back, rprio, run1, weights)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem)
    before = _levels(problem, start)
    chained, _ = exchange_module._chain_trades(
        problem, _levels, start, before, exchange_module._Run(problem, lambda: True)
    )
    assert_a_kept_trade(problem, start, chained, _levels)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_solve_module, "greedy", lambda problem: _start(problem))
        decision = solve(snap, ALLOCATE, wall=False, skip=(SEARCH, SECOND_FILL))
    assert check(snap, decision, ALLOCATE) == []
