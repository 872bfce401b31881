"""The clearing trade (:mod:`vcsat.solver.search.clearing_trade`): a queue's pool cleared of the work
no tier that important counts, its counted smaller pods moved into the room that work leaves.

- A table of small clusters: two 8-GPU nodes, ``n0`` (the only node q1's waiting ``want`` pod of
  ``wsize`` GPUs, priority 0, may use) and ``n1``. The decision the trade starts from puts on
  ``n0`` q1's ``small`` 1-GPU priority-0 pods (counted at q1's top tier) and ``low0`` 1-GPU
  priority -100 pods of q1 (counted only at its second tier), and on ``n1`` ``low1`` such pods and
  q2's ``busy`` 1-GPU priority-0 pods (counted at the top tier: q2 is below its share). q1
  deserves 12 GPUs, q2 4. The trade takes out the ``low`` pods (on the pool, and on ``n1``, where
  ``small`` may go) and the ``small`` pods, places ``want`` first, then the ``small`` pods: the top
  tier rises where ``small`` finds room on ``n1`` and where it does not but ``want`` counts more
  than what is lost; no trade where nothing is uncounted; refused where ``want`` does not fit even
  so (``busy`` holds what ``small`` would need).
- :func:`counted_upto`: a queue's classes counted at a tier and above, not below.
- A Hypothesis property over such clusters: the clearing trades rank at least as high as the
  decision they start from (strictly, where they change it), keep every node's room and every gang
  whole or nothing, and the cycle from that start passes the validator.
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
from vcsat.solver.objectives.fairness import fair_ranks, fair_share_values
from vcsat.solver.problem import build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.clearing_trade import clearing_trade, counted_upto

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic


def _case(small: int, low0: int, low1: int, busy: int, wsize: int = 8) -> Snapshot:
    """The module docstring's cluster."""
    nodes = [
        node("n0", cpu=64, memory="512Gi", gpus=8, labels={"kind": "a"}),
        node("n1", cpu=64, memory="512Gi", gpus=8, labels={"kind": "b"}),
    ]
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("small", small, dict(queue="q1", gpus=1, priority=0, created=1)),
        ("low0", low0, dict(queue="q1", gpus=1, priority=-100, created=2)),
        ("low1", low1, dict(queue="q1", gpus=1, priority=-100, created=3)),
        ("busy", busy, dict(queue="q2", gpus=1, priority=0, created=4)),
        ("want", 1, dict(queue="q1", gpus=wsize, priority=0, created=5, selector={"kind": "a"})),
    ]:
        if count:
            p, g = gangs(prefix, count, **{"cpu": "1", **kwargs})
            pods += p
            groups += g
    queues = [queue("q1", deserved={"nvidia.com/gpu": 12}), queue("q2", deserved={"nvidia.com/gpu": 4})]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _start(problem: Any) -> Any:
    """The decision the trade starts from: ``small`` and ``low0`` on ``n0``, ``low1`` and ``busy``
    on ``n1``, ``want`` waiting."""
    return _on(problem, {"small": "n0", "low0": "n0", "low1": "n1", "busy": "n1"})


def _on(problem: Any, on: dict[str, str]) -> Any:
    """Every gang whose name starts with a key of ``on`` on that key's node."""
    kinds = {g.key: g.key.split("/")[1].split("-")[0] for g in problem.gangs}
    return placed_on(problem, {key: on[kind] for key, kind in kinds.items() if kind in on})


def _named(problem: Any, gangs: Any) -> set[str]:
    return {problem.gangs[g].key.split("/")[1].split("-")[0] for g in gangs}


def _trade(problem: Any, start: Any) -> Any:
    return exchange_module._clearing_trades(
        problem,
        _levels,
        start,
        _levels(problem, start),
        exchange_module.trading_tiers(problem, start),
        exchange_module._Run(problem, lambda: True),
    )


# (small, low0, low1, busy, want's GPUs, the gangs the first trade takes out, want placed)
CASES = [
    (4, 4, 4, 4, 8, {"small", "low0", "low1"}, True),  # small moves to n1 where low1 was
    (4, 4, 0, 8, 8, {"small", "low0"}, True),  # no room on n1: small is lost, want counts more
    (4, 0, 0, 8, 8, None, False),  # nothing uncounted: no trade
    (0, 4, 4, 2, 8, {"low0"}, True),  # no mover: the pool's uncounted pods alone (n1 not reached)
    (6, 2, 0, 8, 4, {"small", "low0"}, True),  # a 4-GPU want: the same on part of the node
]


@pytest.mark.parametrize(("small", "low0", "low1", "busy", "wsize", "drop", "placed"), CASES)
def test_the_clearing_trade_frees_the_pool_of_uncounted_work(
    small: int, low0: int, low1: int, busy: int, wsize: int, drop: set[str] | None, placed: bool
) -> None:
    snap = _case(small, low0, low1, busy, wsize)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem)
    top = fair_ranks(problem)[0]
    offered = clearing_trade(problem, start, top, "q1")
    if drop is None:
        assert offered is None
    else:
        assert offered is not None
        assert _named(problem, offered.drop) == drop
        assert _named(problem, offered.first) == {"want"}
        assert _named(problem, offered.movers) == ({"small"} if "small" in drop else set())
    before = _levels(problem, start)
    traded, rank = _trade(problem, start)
    assert rank == _levels(problem, traded)
    want = next(g.index for g in problem.gangs if "want" in g.key)
    assert (want in traded.placed) is placed
    if placed:
        assert rank > before
        assert fair_share_values(problem, traded)[top] > fair_share_values(problem, start)[top]
        if low1:
            assert all(g.index in traded.placed for g in problem.gangs if "small" in g.key)
    else:
        assert traded is start


def test_a_trade_whose_movers_find_no_room_is_refused() -> None:
    # q2's counted pods hold the pool; the only other nodes are held by q1's running pods and by
    # q3's counted ones: the movers are lost, and q2 (at its share) loses more than q1 (two thirds
    # of its share held already) gains with want.
    nodes = [
        node("n0", cpu=64, memory="512Gi", gpus=8, labels={"kind": "a"}),
        node("n1", cpu=64, memory="512Gi", gpus=8, labels={"kind": "b"}),
        node("n2", cpu=64, memory="512Gi", gpus=8, labels={"kind": "b"}),
    ]
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("held", 8, dict(queue="q1", gpus=1, priority=0, node="n2", created=-100)),
        ("busy", 7, dict(queue="q2", gpus=1, priority=0, created=1)),
        ("low0", 1, dict(queue="q1", gpus=1, priority=-100, created=2)),
        ("fill", 8, dict(queue="q3", gpus=1, priority=0, created=3, selector={"kind": "b"})),
        ("want", 1, dict(queue="q1", gpus=8, priority=0, created=5, selector={"kind": "a"})),
    ]:
        p, g = gangs(prefix, count, **{"cpu": "1", **kwargs})
        pods += p
        groups += g
    queues = [
        queue("q1", deserved={"nvidia.com/gpu": 12}),
        queue("q2", deserved={"nvidia.com/gpu": 7}),
        queue("q3", deserved={"nvidia.com/gpu": 8}),
    ]
    problem = build_problem(snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues), ALLOCATE)
    start = _on(problem, {"busy": "n0", "low0": "n0", "fill": "n1"})
    offered = clearing_trade(problem, start, fair_ranks(problem)[0], "q1")
    assert offered is not None and _named(problem, offered.movers) == {"busy"}
    assert _named(problem, offered.drop) == {"busy", "low0"}
    traded, _ = _trade(problem, start)
    assert traded is start


def test_counted_upto_holds_a_queues_classes_of_the_tiers_that_important() -> None:
    problem = build_problem(_case(4, 4, 4, 4), ALLOCATE)
    top, second = fair_ranks(problem)[:2]
    classes = {name: {c for g in problem.gangs if name in g.key for c in g.classes} for name in ("small", "low0")}
    assert classes["small"] <= counted_upto(problem, top)["q1"]
    assert not classes["low0"] & counted_upto(problem, top)["q1"]
    assert classes["low0"] <= counted_upto(problem, second)["q1"]


CLUSTERS = {
    "small": st.integers(0, 6),
    "low0": st.integers(0, 4),
    "low1": st.integers(0, 4),
    "busy": st.integers(0, 4),
    "wsize": st.sampled_from([2, 4, 8]),
}
"""The module docstring's clusters, as Hypothesis draws them (``_case``'s arguments)."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CLUSTERS)
def test_clearing_trades_never_rank_lower_and_the_cycle_validates(
    small: int, low0: int, low1: int, busy: int, wsize: int
) -> None:
    # The decision must fit the nodes it starts from: n0 and n1 hold 8 GPUs each.
    low0 = min(low0, 8 - small)
    busy = min(busy, 8 - low1)
    snap = _case(small, low0, low1, busy, wsize)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem)
    traded, _ = _trade(problem, start)
    assert_a_kept_trade(problem, start, traded, _levels)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_solve_module, "greedy", lambda problem: _start(problem))
        decision = solve(snap, ALLOCATE, wall=False, skip=(SEARCH, SECOND_FILL))
    assert check(snap, decision, ALLOCATE) == []
