"""The chain trade's second look (:mod:`vcsat.solver.search.chain`, ``flatter``): a flatter
queue's work at the tier taken out where nothing else frees the room the moved whole-node pod needs.

- A table of small clusters: four 8-GPU nodes, ``n0`` (``pool=narrow``) and ``n1`` of kind
  ``big``, ``n2`` full with q2's running work, ``n3`` holding ``run3`` GPUs of q3's running work.
  q1 waits with a priority-500 8-GPU pod ``want`` that only ``n0`` takes; q2's priority-1000
  8-GPU pod ``mover`` (any ``big`` node) is on ``n0`` in the decision the trade starts from; ``n1``
  holds ``small`` 1-GPU pods of q3 at ``prio``. With ``wish`` q3 also waits with an 8-GPU pod no
  node has room for, so it stays below its deserved share, yet its next GPU gains the tier less
  than q1's (q1 holds nothing: the steepest piece of the utility). The first look finds no chain
  (q3's small pods are neither lower-ranked work no tier needs nor q1's own); the second takes
  them out, moves ``mover`` to ``n1`` and places ``want`` on ``n0``, and the tier, read with q3's
  loss, rises (the refill puts q3's pods back where there is room). Not where q3's pods rank above
  ``want`` (placed work of a higher priority is not given up for it), nor where the tier, read
  with q3's loss, would not rise (q3 at its share losing as much as q1 gains).
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


def _case(prio: int, wish: bool, run3: int, small: int, weights: tuple[int, int, int] = (1, 2, 2)) -> Snapshot:
    """The module docstring's cluster."""
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
        ("held", 1 if run3 else 0, dict(queue="q3", node="n3", gpus=run3, priority=prio, created=-100)),
        ("mover", 1, dict(queue="q2", priority=1000, gpus=8, selector={"kind": "big"}, created=1)),
        ("small", small, dict(queue="q3", priority=prio, gpus=1, created=2)),
        ("wish", 1 if wish else 0, dict(queue="q3", priority=prio, gpus=8, selector={"kind": "other"}, created=3)),
        ("want", 1, dict(queue="q1", priority=500, gpus=8, selector={"pool": "narrow"}, created=4)),
    ]:
        if count:
            p, g = gangs(prefix, count, **{"cpu": "1", **kwargs})
            pods += p
            groups += g
    queues = [queue(f"q{i + 1}", weight=w) for i, w in enumerate(weights)]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _start(problem: Any, small: int) -> Any:
    """The decision the trade starts from: ``mover`` on ``n0``, the small pods on ``n1``."""
    return placed_on(problem, {"ns/mover-0": "n0", **{f"ns/small-{i}": "n1" for i in range(small)}})


def _key(problem: Any, key: str) -> int:
    return next(g.index for g in problem.gangs if g.key == key)


# (q3's priority, whether q3 waits with more, q3's running GPUs on n3, q3's small pods on n1,
# whether the chain places ``want``)
CASES = [
    (500, True, 4, 2, True),  # q3 below its share, flatter, its pods of want's rank: taken out
    (0, True, 3, 4, True),  # the same with q3's pods ranked below want's (counted at the tier)
    (500, False, 4, 2, True),  # q3 at its share (no slope): its loss is made up by q1's gain
    (1000, False, 4, 2, False),  # q3's pods rank above want: not taken out
    (1000, True, 4, 2, False),  # the same, q3 below its share
    (500, False, 0, 2, False),  # q3 at its share losing all it holds: the tier would not rise
]

PATIENT = {(500, False, 0, 2)}
"""The cases of :data:`CASES` where the second look offers nothing but the chain trades place
``want`` all the same: the fourth look (``patient``) counts q3's small pods, which fit back on the
empty ``n3``, and the tier, read with them put back, rises."""


@pytest.mark.parametrize(("prio", "wish", "run3", "small", "placed"), CASES)
def test_the_second_look_takes_a_flatter_queues_work_and_raises_the_tier(
    prio: int, wish: bool, run3: int, small: int, placed: bool
) -> None:
    snap = _case(prio, wish, run3, small)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem, small)
    want, mover = _key(problem, "ns/want-0"), _key(problem, "ns/mover-0")
    tiers = trading_tiers(problem, start)

    def offered(flatter: bool) -> list[tuple[set[int], set[int]]]:
        spare = {tier: exchange_module._not_needed(problem, start, 1001, upto=tier) for tier in tiers}
        return [
            (set(trade.first), set(trade.movers))
            for tier in tiers
            for trade in chains(problem, start, tier, "q1", spare[tier], flatter=flatter)
        ]

    assert offered(False) == []  # the first look finds none: only the second can
    assert offered(True)[:1] == ([({want}, {mover})] if placed else [])
    before = _levels(problem, start)
    traded, rank = exchange_module._chain_trades(
        problem, _levels, start, before, exchange_module._Run(problem, lambda: True)
    )
    assert rank == _levels(problem, traded)
    chained = placed or (prio, wish, run3, small) in PATIENT
    assert (want in traded.placed) is chained
    if chained:
        assert rank > before
        assert mover in traded.placed  # moved, not dropped
        order = sorted(fair_share_values(problem, start))
        after, first = fair_share_values(problem, traded), fair_share_values(problem, start)
        assert [after[t] for t in order] > [first[t] for t in order]  # a tier rose
    else:
        assert traded is start


CLUSTERS = {
    "prio": st.sampled_from([0, 500, 1000]),
    "wish": st.booleans(),
    "run3": st.integers(0, 8),
    "small": st.integers(0, 8),
    "weights": st.tuples(*[st.integers(1, 4)] * 3),
}
"""The module docstring's clusters, as Hypothesis draws them (``_case``'s arguments)."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CLUSTERS)
def test_second_looks_never_rank_lower_and_the_cycle_validates(
    prio: int, wish: bool, run3: int, small: int, weights: tuple[int, int, int]
) -> None:
    snap = _case(prio, wish, run3, small, weights)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem, small)
    before = _levels(problem, start)
    chained, _ = exchange_module._chain_trades(
        problem, _levels, start, before, exchange_module._Run(problem, lambda: True)
    )
    assert_a_kept_trade(problem, start, chained, _levels)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_solve_module, "greedy", lambda problem: _start(problem, small))
        decision = solve(snap, ALLOCATE, wall=False, skip=(SEARCH, SECOND_FILL))
    assert check(snap, decision, ALLOCATE) == []
