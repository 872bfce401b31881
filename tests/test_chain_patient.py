"""The chain trade's fourth look (:mod:`vcsat.solver.search.chain`, ``patient``): the flatter
look's gangs carried on past a step its estimate reads as no rise, the victims' gangs that fit back
into the room left counted before the tier is read.

- A table of small clusters: five 8-GPU nodes (four without ``n3``), ``n0`` (``pool=narrow``) and
  ``n1`` of kind ``big``, ``n2``-``n4`` of kind ``other``, ``n4`` holding q2's running work. q1
  waits with a priority-500 8-GPU pod ``want`` that only ``n0`` takes; q2's priority-1000 8-GPU
  pod ``mover`` (any ``big`` node) is on ``n0`` in the decision the trade starts from; q3's
  two-pod gang ``pair`` (``gpus`` each, priority ``prio``) has one pod on ``n1`` and one on ``n2``.
  Moving ``mover`` to ``n1`` takes the whole of ``pair`` out, which the flatter look reads as a
  loss of both its pods against q1's one pod, so it offers nothing; ``pair`` fits back whole on
  ``n2`` and ``n3`` (or on ``n2`` alone, with 4-GPU pods), so the patient look offers the trade and
  the exchange keeps it (the tier rises, nothing is lost). Not where ``pair`` fits nowhere once
  ``mover`` has moved (no ``n3``, 8-GPU pods), nor where ``pair`` ranks above ``want``.
  The second look names ``want`` as left out for the tier as read wherever ``pair`` may go (the
  exchange asks the patient look only then).
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
from trade_checks import assert_a_kept_trade

from vcsat.model import Snapshot
from vcsat.solver import check, solve
from vcsat.solver.assignment import Assignment
from vcsat.solver.deadline import SEARCH, SECOND_FILL
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.chain import chains
from vcsat.solver.search.exchange import trading_tiers

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic


def _case(
    gpus: int, spare: bool, prio: int = 500, weights: tuple[int, int, int] = (1, 2, 2), run2: int = 8
) -> Snapshot:
    """The module docstring's cluster."""
    nodes = [
        node("n0", cpu=64, memory="512Gi", gpus=8, labels={"kind": "big", "pool": "narrow"}),
        node("n1", cpu=64, memory="512Gi", gpus=8, labels={"kind": "big"}),
        node("n2", cpu=64, memory="512Gi", gpus=8, labels={"kind": "other"}),
        *([node("n3", cpu=64, memory="512Gi", gpus=8, labels={"kind": "other"})] if spare else []),
        node("n4", cpu=64, memory="512Gi", gpus=8, labels={"kind": "other"}),
    ]
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, kwargs in [
        ("run", dict(queue="q2", node="n4", gpus=run2, priority=1000, created=-100)),
        ("mover", dict(queue="q2", priority=1000, gpus=8, selector={"kind": "big"}, created=1)),
        ("pair", dict(queue="q3", priority=prio, gpus=gpus, size=2, created=2)),
        ("want", dict(queue="q1", priority=500, gpus=8, selector={"pool": "narrow"}, created=4)),
    ]:
        p, g = gangs(prefix, 1, **{"cpu": "1", **kwargs})
        pods += p
        groups += g
    queues = [queue(f"q{i + 1}", weight=w) for i, w in enumerate(weights)]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _start(problem: Problem) -> Assignment:
    """The decision the trade starts from: ``mover`` on ``n0``, ``pair``'s pods on ``n1`` and ``n2``."""
    node_of = {n.name: i for i, n in enumerate(problem.nodes)}
    out = Assignment()
    for gang in problem.gangs:
        where = {"ns/mover-0": ["n0"], "ns/pair-0": ["n1", "n2"]}.get(gang.key)
        if where is None:
            continue
        out.placed.add(gang.index)
        for c in gang.classes:
            s = problem.classes[c].shape
            out.count[c] = len(problem.classes[c].pods)
            for name in where:
                key = (s, node_of[name])
                out.shape_slots[key] = out.shape_slots.get(key, 0) + 1
                out.gang_slots[(gang.index, *key)] = out.gang_slots.get((gang.index, *key), 0) + 1
    return out


def _key(problem: Problem, key: str) -> int:
    return next(g.index for g in problem.gangs if g.key == key)


# (pair's GPUs per pod, whether n3 is there, pair's priority, whether the chain places ``want``)
CASES = [
    (8, True, 500, True),  # pair fits back on n2 and n3: offered, kept
    (4, True, 500, True),  # the same with smaller pods
    (4, False, 500, True),  # pair's two 4-GPU pods fit back on n2 alone
    (8, False, 500, False),  # pair fits nowhere once mover is on n1: the tier would fall
    (8, True, 1000, False),  # pair ranks above want: not taken out
]


@pytest.mark.parametrize(("gpus", "spare", "prio", "placed"), CASES)
def test_the_patient_look_counts_the_victims_that_fit_back(gpus: int, spare: bool, prio: int, placed: bool) -> None:
    problem = build_problem(_case(gpus, spare, prio), ALLOCATE)
    start = _start(problem)
    want, mover, pair = (_key(problem, key) for key in ("ns/want-0", "ns/mover-0", "ns/pair-0"))
    tiers = trading_tiers(problem, start)
    assert tiers

    def offered(**looks: bool) -> list[tuple[set[int], set[int], set[int]]]:
        spare_of = {tier: exchange_module._not_needed(problem, start, 1001, upto=tier) for tier in tiers}
        return [
            (set(trade.first), set(trade.movers), set(trade.victims))
            for tier in tiers
            for trade in chains(problem, start, tier, "q1", spare_of[tier], **looks)
        ]

    # None of the three looks before it finds one: only the patient look can.
    assert offered() == offered(flatter=True) == offered(swap=True) == []
    # The second look tells which gangs it left out for the tier as read (the exchange asks the
    # patient look only where there are some): ``want`` wherever ``pair`` may be taken out.
    passed: list[int] = []
    for tier in tiers:
        spare_of = exchange_module._not_needed(problem, start, 1001, upto=tier)
        list(chains(problem, start, tier, "q1", spare_of, flatter=True, passed=passed))
    assert set(passed) == ({want} if prio < 1000 else set())
    assert offered(flatter=True, patient=True)[:1] == ([({want}, {mover}, {pair})] if placed else [])
    before = _levels(problem, start)
    traded, rank = exchange_module._chain_trades(
        problem, _levels, start, before, exchange_module._Run(problem, lambda: True)
    )
    assert rank == _levels(problem, traded)
    assert (want in traded.placed) is placed
    if placed:
        assert rank > before
        assert {mover, pair} <= traded.placed  # moved and put back, not dropped
        order = sorted(fair_share_values(problem, start))
        after, first = fair_share_values(problem, traded), fair_share_values(problem, start)
        assert [after[t] for t in order] > [first[t] for t in order]  # a tier rose
    else:
        assert traded is start


CLUSTERS = {
    "gpus": st.integers(1, 8),
    "spare": st.booleans(),
    "prio": st.sampled_from([0, 500, 1000]),
    "weights": st.tuples(*[st.integers(1, 4)] * 3),
    "run2": st.integers(0, 8),
}
"""The module docstring's clusters, as Hypothesis draws them (``_case``'s arguments)."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CLUSTERS)
def test_patient_looks_never_rank_lower_and_the_cycle_validates(
    gpus: int, spare: bool, prio: int, weights: tuple[int, int, int], run2: int
) -> None:
    snap = _case(gpus, spare, prio, weights, run2)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem)
    chained, _ = exchange_module._chain_trades(
        problem, _levels, start, _levels(problem, start), exchange_module._Run(problem, lambda: True)
    )
    assert_a_kept_trade(problem, start, chained, _levels)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_solve_module, "greedy", _start)
        decision = solve(snap, ALLOCATE, wall=False, skip=(SEARCH, SECOND_FILL))
    assert check(snap, decision, ALLOCATE) == []
