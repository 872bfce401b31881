"""The re-pack trade (:mod:`vcsat.solver.search.repack_trade`): other work moved off a below-share
queue's pool to the pools it may also use, clearing uncounted work there.

- A table of small clusters: two 8-GPU nodes, ``n0`` (kind ``a``: the only node q1's waiting
  ``want`` 1-GPU priority-0 pods may use) and ``n1`` (kind ``b``). The decision the trade starts
  from puts q2's ``flex`` 1-GPU priority-0 pods (no selector: they may run on either node) on
  ``n0``, and on ``n1`` q2's ``low`` 1-GPU priority -100 pods (counted at no tier as important as
  the top one) and q3's ``busy`` 1-GPU priority-0 pods (counted, confined to kind ``b``). q1
  deserves 8 GPUs, q2 8, q3 8. The trade takes ``flex`` off ``n0`` and ``low`` off ``n1``, places
  ``want`` first, then ``flex``: kept where the top tier rises (``flex`` finds room on ``n1``, or
  q1's gain outweighs q2's loss on the concave utility); not offered where ``flex`` may not leave
  the pool or where nothing on the pool would move.
- A case where the trade is offered and refused: ``flex`` finds no room off the pool, and q1's
  one 8-GPU pod would gain what q2 loses, no more.
- A Hypothesis property over the table's clusters: the re-pack trades rank at least as high as
  the decision they start from (strictly, where they change it), keep every node's room and every
  gang whole or nothing, and the cycle from that start passes the validator.
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
from vcsat.solver.search.repack_trade import repack_trade

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic


def _case(flex: int, low: int, busy: int, want: int, *, pinned: bool = False, wsize: int = 1) -> Snapshot:
    """The module docstring's cluster; ``pinned``: ``flex`` confined to kind ``a`` too; ``wsize``:
    the GPUs of each ``want`` pod."""
    nodes = [
        node("n0", cpu=64, memory="512Gi", gpus=8, labels={"kind": "a"}),
        node("n1", cpu=64, memory="512Gi", gpus=8, labels={"kind": "b"}),
    ]
    pods: list[Any] = []
    groups: list[Any] = []
    pin: dict[str, Any] = {"selector": {"kind": "a"}} if pinned else {}
    for prefix, count, kwargs in [
        ("flex", flex, dict(queue="q2", gpus=1, priority=0, created=1, **pin)),
        ("low", low, dict(queue="q2", gpus=1, priority=-100, created=2)),
        ("busy", busy, dict(queue="q3", gpus=1, priority=0, created=3, selector={"kind": "b"})),
        ("want", want, dict(queue="q1", gpus=wsize, priority=0, created=5, selector={"kind": "a"})),
    ]:
        if count:
            p, g = gangs(prefix, count, **{"cpu": "1", **kwargs})
            pods += p
            groups += g
    queues = [
        queue("q1", deserved={"nvidia.com/gpu": 8}),
        queue("q2", deserved={"nvidia.com/gpu": 8}),
        queue("q3", deserved={"nvidia.com/gpu": 8}),
    ]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _start(problem: Any) -> Any:
    """The decision the trade starts from: ``flex`` on ``n0``, ``low`` and ``busy`` on ``n1``,
    ``want`` waiting."""
    kinds = {g.key: g.key.split("/")[1].split("-")[0] for g in problem.gangs}
    on = {"flex": "n0", "low": "n1", "busy": "n1"}
    return placed_on(problem, {key: on[kind] for key, kind in kinds.items() if kind in on})


def _named(problem: Any, gangs: Any) -> set[str]:
    return {problem.gangs[g].key.split("/")[1].split("-")[0] for g in gangs}


def _trade(problem: Any, start: Any) -> Any:
    return exchange_module._repack_trades(
        problem,
        _levels,
        start,
        _levels(problem, start),
        exchange_module.trading_tiers(problem, start),
        exchange_module._Run(problem, lambda: True),
    )


def _count(problem: Any, assignment: Any, name: str) -> int:
    return sum(1 for g in problem.gangs if g.key.split("/")[1].startswith(name) and g.index in assignment.placed)


# (flex, low, busy, want, the gangs the trade takes out, flex's pods placed after, want's)
CASES = [
    (8, 8, 0, 4, {"flex", "low"}, 8, 4),  # flex moves where low was; want takes n0 half
    (8, 4, 4, 8, {"flex", "low"}, 4, 8),  # room for half of flex on n1: the utility's concavity
    (6, 0, 0, 2, {"flex"}, 6, 2),  # flex moves to n1 (free), want on n0
    (8, 0, 8, 4, {"flex"}, 4, 4),  # n1 full of counted work: q1's 4 GPUs against q2's last 4
]


@pytest.mark.parametrize(("flex", "low", "busy", "want", "drop", "flex_after", "want_after"), CASES)
def test_the_repack_trade_moves_flexible_work_off_the_pool(
    flex: int, low: int, busy: int, want: int, drop: set[str] | None, flex_after: int, want_after: int
) -> None:
    problem = build_problem(_case(flex, low, busy, want), ALLOCATE)
    start = _start(problem)
    top = fair_ranks(problem)[0]
    offered = repack_trade(problem, start, top, "q1")
    if drop is None:
        assert offered is None
    else:
        assert offered is not None
        assert _named(problem, offered.drop) == drop
        assert _named(problem, offered.first) == {"want"}
        assert _named(problem, offered.movers) == {"flex"}
    traded, rank = _trade(problem, start)
    assert rank == _levels(problem, traded)
    assert _count(problem, traded, "flex") == flex_after
    assert _count(problem, traded, "want") == want_after
    if want_after:
        assert rank > _levels(problem, start)
        assert fair_share_values(problem, traded)[top] > fair_share_values(problem, start)[top]
    else:
        assert traded is start


def test_no_trade_where_the_pools_work_may_not_leave_it() -> None:
    problem = build_problem(_case(8, 8, 0, 4, pinned=True), ALLOCATE)
    start = _start(problem)
    assert repack_trade(problem, start, fair_ranks(problem)[0], "q1") is None
    assert _trade(problem, start)[0] is start


def test_a_trade_that_loses_more_than_it_gains_is_refused() -> None:
    # One 8-GPU want pod: with n1 full of q3's counted work flex finds no room off the pool, and
    # q1 would gain the 8 GPUs q2 loses, the two queues' shares alike: the tier and placed work
    # stay as they are, and a trade that ranks no higher is not made.
    problem = build_problem(_case(8, 0, 8, 1, wsize=8), ALLOCATE)
    start = _start(problem)
    offered = repack_trade(problem, start, fair_ranks(problem)[0], "q1")
    assert offered is not None and _named(problem, offered.movers) == {"flex"}
    assert _trade(problem, start)[0] is start


CLUSTERS = {
    "flex": st.integers(0, 8),
    "low": st.integers(0, 8),
    "busy": st.integers(0, 8),
    "want": st.integers(1, 8),
    "pinned": st.booleans(),
    "wsize": st.sampled_from([1, 2, 4, 8]),
}
"""The module docstring's clusters, as Hypothesis draws them (``_case``'s arguments)."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CLUSTERS)
def test_repack_trades_never_rank_lower_and_the_cycle_validates(
    flex: int, low: int, busy: int, want: int, pinned: bool, wsize: int
) -> None:
    # The decision must fit the nodes it starts from: n1 holds 8 GPUs.
    busy = min(busy, 8 - low)
    snap = _case(flex, low, busy, want, pinned=pinned, wsize=wsize)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem)
    traded, _ = _trade(problem, start)
    assert_a_kept_trade(problem, start, traded, _levels)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_solve_module, "greedy", lambda problem: _start(problem))
        decision = solve(snap, ALLOCATE, wall=False, skip=(SEARCH, SECOND_FILL))
    assert check(snap, decision, ALLOCATE) == []
