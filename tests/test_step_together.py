"""The step trades of one look tried first as one (:func:`vcsat.solver.search.step_trade.together`).

- A table of small clusters: one node ``n0`` whose GPUs are all taken, by q1's ``held`` running
  1-GPU pods and by the 1-GPU pods ``give2`` of q2 and ``give3`` of q3 (placed by the decision the
  trades start from); q1 waits with ``want`` 1-GPU pods, one gang each; each queue deserves 4 GPUs.
  A GPU beyond q2's or q3's share counts nothing there, and q1's share counts it: each look offers
  one step trade per giving queue that has one to spare. Made one at a time, a trade places one
  waiting pod and the next is made on the decision it leaves (two trades where both give); the
  trades of the look made as one place as many in one trade. With one trade allowed, q1 places
  ``one`` of its waiting pods, where without the joined trade it placed one at most.
- A Hypothesis property against a plain reference: :func:`together` takes, in order, the first
  trade of each giving queue, and is their union (drop and gangs placed first), or None where
  fewer than two giving queues are named.
- A Hypothesis property over such clusters: the step trades, joined or not, never rank lower than
  the decision they start from, every node's room and gang whole, at every count of trades allowed.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from builders import gangs, node, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_exchange import _placed
from test_gap_bound import ALLOCATE
from trade_checks import assert_a_kept_trade

from vcsat.model import Snapshot
from vcsat.solver.problem import build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search import step_trade as step_module
from vcsat.solver.search.step_trade import StepTrade, together

_levels = importlib.import_module("vcsat.solver.solve")._lexicographic


def _case(held: int, give2: int, give3: int, want: int) -> Snapshot:
    """The module docstring's cluster."""
    gpus = held + give2 + give3
    nodes = [node("n0", cpu=64, memory="512Gi", gpus=gpus)]
    if gpus < 12:  # GPUs no pod here tolerates: the cluster holds the three shares whatever n0's
        nodes.append(node("n2", cpu=64, memory="512Gi", gpus=12 - gpus, taints=["pad=x:NoSchedule"]))
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("held", held, dict(queue="q1", node="n0", gpus=1, created=-100)),
        ("give2", give2, dict(queue="q2", gpus=1, created=1)),
        ("give3", give3, dict(queue="q3", gpus=1, created=1.5)),
        ("want", want, dict(queue="q1", gpus=1, created=2)),
    ]:
        if count:
            p, g = gangs(prefix, count, **{"cpu": "1", **kwargs})
            pods += p
            groups += g
    queues = [queue(name, deserved={"nvidia.com/gpu": 4}) for name in ("q1", "q2", "q3")]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _start(problem: Any) -> Any:
    """The decision the trades start from: q2's and q3's pods on ``n0``, q1's ``want`` waiting."""
    return _placed(problem, {g.key: "n0" for g in problem.gangs if g.key.startswith(("ns/give2-", "ns/give3-"))})


class _Allowing:
    """A ``go`` that lets ``k`` trades start."""

    def __init__(self, k: int) -> None:
        self.k, self.asked = k, 0

    def __call__(self) -> bool:
        self.asked += 1
        return self.asked <= self.k


def _wants_placed(problem: Any, decision: Any) -> int:
    return sum(1 for g in decision.placed if problem.gangs[g].key.startswith("ns/want-"))


def _stepped(problem: Any, start: Any, trades: int) -> Any:
    """``start`` after the spare-only step trades, ``trades`` of them allowed."""
    traded, _ = exchange_module._step_trades(
        problem,
        _levels,
        start,
        _levels(problem, start),
        exchange_module.trading_tiers(problem, start),
        exchange_module._Run(problem, _Allowing(trades)),
        spare_only=True,
    )
    return traded


# (q1's running GPUs, q2's and q3's placed 1-GPU pods, q1's waiting pods, placed with one trade)
CASES = [
    (2, 5, 5, 2, 2),  # q2 and q3 a GPU each beyond their shares: both given in one trade
    (2, 5, 5, 1, 1),  # one waiting pod: the joined trade places it, as one trade alone would
    (2, 6, 4, 2, 1),  # only q2 beyond its share (by two): one trade offered per look, nothing to join
    (3, 5, 4, 2, 1),  # only q2 beyond its share: one GPU to give, one pod placed
]


@pytest.mark.parametrize(("held", "give2", "give3", "want", "one"), CASES)
def test_one_joined_step_trade_gives_what_each_giving_queue_spares(
    held: int, give2: int, give3: int, want: int, one: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = build_problem(_case(held, give2, give3, want), ALLOCATE)
    start = _start(problem)
    assert _wants_placed(problem, start) == 0
    traded = _stepped(problem, start, 1)
    assert _wants_placed(problem, traded) == one
    assert_a_kept_trade(problem, start, traded, _levels)
    # Without the joined trade the first trade gives one pod's GPU at most.
    monkeypatch.setattr(exchange_module, "together", lambda trades: None)
    assert _wants_placed(problem, _stepped(problem, start, 1)) == min(one, 1)


def _plain(trades: list[StepTrade]) -> StepTrade | None:
    """The reference: per giving queue its first trade, in order; their union where two or more."""
    seen: dict[str, StepTrade] = {}
    for trade in trades:
        seen.setdefault(trade.donor, trade)
    if len(seen) < 2:
        return None
    drop: set[int] = set()
    first: set[int] = set()
    for trade in seen.values():
        drop |= trade.drop
        first |= trade.first
    return StepTrade(
        trades[0].queue, trades[0].donor, sum(t.rise for t in seen.values()), frozenset(drop), frozenset(first)
    )


TRADES = st.lists(
    st.builds(
        StepTrade,
        queue=st.sampled_from(["q1", "q2"]),
        donor=st.sampled_from(["q3", "q4", "q5"]),
        rise=st.integers(1, 5),
        drop=st.frozensets(st.integers(0, 20), min_size=1, max_size=4),
        first=st.frozensets(st.integers(21, 40), min_size=1, max_size=3),
    ),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(trades=TRADES)
def test_together_is_the_union_of_each_giving_queues_first_trade(trades: list[StepTrade]) -> None:
    assert together(trades) == _plain(trades)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    held=st.integers(0, 4),
    give2=st.integers(0, 7),
    give3=st.integers(0, 7),
    want=st.integers(1, 3),
    allowed=st.integers(0, 4),
)
def test_joined_step_trades_never_rank_lower(held: int, give2: int, give3: int, want: int, allowed: int) -> None:
    if held + give2 + give3 > 12:
        return
    problem = build_problem(_case(held, give2, give3, want), ALLOCATE)
    start = _start(problem)
    assert_a_kept_trade(problem, start, _stepped(problem, start, allowed), _levels)
    assert step_module.together([]) is None
