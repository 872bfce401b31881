"""The slack swap (:func:`vcsat.solver.search.swap_trade.slack_swaps`): a waiting top-priority gang
placed in the GPUs of a lower-ranked gang whose queue can lose them with every tier the same.

A tier counts a queue's share in whole thousandths of its deserved share, rounded down, so where a
thousandth is more than a GPU a queue holds GPUs beyond what its tier value needs. Two nodes of 1,000
GPUs: q1 holds 500 (far above its deserved share) and waits with ``top``, one priority-1000 pod of
``top_gpus`` GPUs; q2 (deserved 1,519 GPUs, below it) holds 490 and waits with ``big`` (999 GPUs) and
thirty 1-GPU pods; q3 (deserved 1 GPU) waits with ``low``, one priority −100 pod of 1 GPU. The
greedy's fair fill gives every free GPU to q3's ``low`` and q2's ``big`` and ten of its singles:
q2 holds 1,499 GPUs, 986 thousandths of its share, which 1,498 give already. ``top`` waits. The
swap trade takes out the lowest-ranked holder, ``low``, whose queue then falls (refused), so main's
exchange leaves ``top`` waiting at every count; the slack swap takes out one of q2's singles, q2's
tier stays, ``top`` runs (no step trade uses q2's slack here). Asking 2 GPUs, ``top`` would take
more than q2's slack of one GPU: no slack swap is offered and the decision stays.
"""

from __future__ import annotations

from typing import Any

import pytest
from builders import gangs, node, queue, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st
from test_gap_bound import ALLOCATE
from trade_checks import placed_on

from vcsat.model import Snapshot
from vcsat.solver import check, solve
from vcsat.solver.deadline import SEARCH
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.problem import build_problem
from vcsat.solver.search.swap_trade import slack_swaps, swaps


def _case(top_gpus: int) -> Snapshot:
    """The module docstring's cluster."""
    nodes = [node(f"n{i}", cpu=4000, memory="8000Gi", gpus=1000) for i in range(2)]
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("r1", 1, dict(queue="q1", node="n0", gpus=500, priority=1000, created=-100, cpu="1")),
        ("r2", 1, dict(queue="q2", node="n0", gpus=490, created=-100, cpu="1")),
        ("big", 1, dict(queue="q2", priority=0, gpus=999, cpu="1", created=1)),
        ("one", 30, dict(queue="q2", priority=0, gpus=1, cpu="1", created=2)),
        ("low", 1, dict(queue="q3", priority=-100, gpus=1, cpu="1", created=3)),
        ("top", 1, dict(queue="q1", priority=1000, gpus=top_gpus, cpu="1", created=100)),
    ]:
        p, g = gangs(prefix, count, **kwargs)
        pods += p
        groups += g
    queues = [
        queue("q1", deserved={"nvidia.com/gpu": "10"}),
        queue("q2", deserved={"nvidia.com/gpu": "2000"}),
        queue("q3", deserved={"nvidia.com/gpu": "10"}),
    ]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _replay(snap: Snapshot, trades: int) -> Any:
    return solve(snap, ALLOCATE, wall=False, skip=frozenset({SEARCH, f"exchange_trades={trades}"}))


def _placed(decision: Any, prefix: str) -> int:
    return sum(1 for b in decision.bindings if b.pod.startswith(f"ns/{prefix}-"))


# (GPUs ``top`` asks, whether the slack swap places it)
CASES = [
    (1, True),  # one of q2's singles goes: 1,498 GPUs still give q2 its 986 thousandths
    (2, False),  # two would take q2 below 986: no slack swap, and the swap trade's is refused
]


@pytest.mark.parametrize(("top_gpus", "placed"), CASES)
def test_the_slack_swap_places_a_top_gang_where_the_victims_queue_keeps_its_tier(top_gpus: int, placed: bool) -> None:
    snap = _case(top_gpus)
    start = _replay(snap, 0)
    assert _placed(start, "top") == 0 and _placed(start, "low") == 1 and _placed(start, "one") == 10
    traded = _replay(snap, 1)
    assert check(snap, traded, ALLOCATE) == []
    before = [level.value for level in start.solver.levels]
    after = [level.value for level in traded.solver.levels]
    fair = [i for i, level in enumerate(start.solver.levels) if "fair share" in level.level]
    assert fair and [after[i] for i in fair] == [before[i] for i in fair]  # every tier stays
    if placed:
        assert _placed(traded, "top") == 1
        assert _placed(traded, "one") == 9 and _placed(traded, "low") == 1
        assert after > before
    else:
        assert after == before
        assert {b.pod for b in traded.bindings} == {b.pod for b in start.bindings}
        assert {b.pod for b in _replay(snap, 8).bindings} == {b.pod for b in start.bindings}
    # A replay of the same count decides the same (the exchange's trades are a fixed order).
    assert {(b.pod, b.node) for b in _replay(snap, 1).bindings} == {(b.pod, b.node) for b in traded.bindings}


def _greedy_like(problem: Any, singles: int) -> Any:
    """The greedy's decision of the module docstring's cluster, by hand: ``low`` and ``big`` and
    ``singles`` of q2's 1-GPU pods placed (the first on n0's free GPUs, the rest on n1)."""
    where = {"ns/low-0": "n0", "ns/big-0": "n1"}
    for j in range(singles):
        where[f"ns/one-{j}"] = "n0" if j < 9 else "n1"
    return placed_on(problem, where)


def test_the_slack_swap_offers_a_victim_within_the_queues_slack_and_the_swap_trade_does_not() -> None:
    problem = build_problem(_case(1), ALLOCATE)
    keys = {gang.key: gang.index for gang in problem.gangs}
    decision = _greedy_like(problem, 10)
    # The swap trade takes the lowest-ranked holder (q3's, which its tier needs whole).
    assert list(swaps(problem, decision, set())) == [(keys["ns/top-0"], [keys["ns/low-0"]])]
    offered = list(slack_swaps(problem, decision, set()))
    assert len(offered) == 1 and offered[0][0] == keys["ns/top-0"]
    (victim,) = offered[0][1]
    assert problem.gangs[victim].queue == "q2" and problem.gangs[victim].key.startswith("ns/one-")
    tried: set[tuple[object, ...]] = set()
    assert len(list(slack_swaps(problem, decision, tried))) == 1
    assert list(slack_swaps(problem, decision, tried)) == []  # a kind tried on the decision is not again
    # Asking more than any queue's slack: nothing offered.
    problem = build_problem(_case(2), ALLOCATE)
    assert list(slack_swaps(problem, _greedy_like(problem, 10), set())) == []


@settings(max_examples=20, deadline=None)
@given(singles=st.integers(min_value=1, max_value=10), top_gpus=st.integers(min_value=1, max_value=3))
def test_a_slack_swaps_victims_never_lower_a_tier(singles: int, top_gpus: int) -> None:
    """Whatever the decision, taking out what a slack swap offers (with nothing put back) leaves every
    fair-share tier's value as it was."""
    problem = build_problem(_case(top_gpus), ALLOCATE)
    decision = _greedy_like(problem, singles)
    before = fair_share_values(problem, decision)
    from vcsat.solver.search.exchange import without

    for _gang, drop in slack_swaps(problem, decision, set()):
        rest = without(problem, decision, drop)
        assert rest is not None
        assert fair_share_values(problem, rest) == before


def test_no_slack_swap_takes_from_a_queue_the_step_trades_use() -> None:
    """A queue a step trade gives to or takes from keeps its slack for it: a tier ranks above the
    placed work a slack swap raises."""
    problem = build_problem(_case(1), ALLOCATE)
    decision = _greedy_like(problem, 10)
    assert list(slack_swaps(problem, decision, set(), keep={"q2"})) == []
    assert len(list(slack_swaps(problem, decision, set(), keep={"q3"}))) == 1
