"""The step trade (:mod:`vcsat.solver.search.step_trade`): a few GPUs moved between a tier's queues
where the tier, counting whole thousandths of each share, rises.

- A table of small clusters: one node ``n0`` whose GPUs are all taken, by q1's ``held`` running
  1-GPU pods (priority ``hprio``) and by q2's ``give`` 1-GPU pods (priority ``gprio``) and, where
  ``low`` is set, q2's 2-GPU priority-0 pod ``low``, both placed by the decision the trade starts
  from; q1 waits with ``want`` (``wsize`` GPUs, priority 0); q1 and q2 each deserve 4 GPUs (an
  ``n2`` no pod tolerates pads the cluster to 8; with more, q2 deserves what q1 does not ask).
  Where ``elsewhere`` is set, ``want`` may use only ``n1``, a 1-GPU node q2's 1-GPU pod ``far``
  takes in the decision. The trade takes out GPUs q2's share does not count (those beyond its
  deserved 4) for ``want`` where q1's share counts them: q1's tier rises, q2's stays. Not where q2
  holds only its share (its loss is q1's gain), nor where ``want`` asks more than q2 can give for
  nothing; not a ``give`` pod on ``n0`` where ``want`` may use only ``n1`` (``far`` goes); and
  where q2's ``give`` pods count at a more important tier (q1's ``held`` pods of priority 1000:
  the tier of each queue's highest priority counts ``give`` but not ``want``), ``low`` goes rather
  than a ``give`` pod that tier would miss.
- Asked only for trades whose giving queue loses nothing (``spare_only``, before the slope trades),
  a GPU beyond q2's share goes, and one of a q2 at its share does not, though q1 (holding 1 of 4,
  on a steeper piece) would gain more than q2 loses.
- A Hypothesis property over such clusters: the step trades rank at least as high as the decision
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
from vcsat.solver.objectives.fairness import fair_ranks, fair_share_values
from vcsat.solver.problem import build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.step_trade import step_trades

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic


def _case(
    held: int, give: int, wsize: int, *, hprio: int = 0, gprio: int = 0, low: bool = False, elsewhere: bool = False
) -> Snapshot:
    """The module docstring's cluster."""
    gpus = held + give + (2 if low else 0)
    nodes = [node("n0", cpu=64, memory="512Gi", gpus=gpus, labels={"kind": "a"})]
    if elsewhere:
        nodes.append(node("n1", cpu=64, memory="512Gi", gpus=1, labels={"kind": "b"}))
        gpus += 1
    if gpus < 8:  # GPUs no pod here tolerates: the cluster holds both shares whatever n0's
        nodes.append(node("n2", cpu=64, memory="512Gi", gpus=8 - gpus, taints=["pad=x:NoSchedule"]))
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("held", held, dict(queue="q1", node="n0", gpus=1, priority=hprio, created=-100)),
        ("give", give, dict(queue="q2", gpus=1, priority=gprio, created=1)),
        ("low", 1 if low else 0, dict(queue="q2", gpus=2, created=1.5)),
        ("far", 1 if elsewhere else 0, dict(queue="q2", gpus=1, created=1.8, selector={"kind": "b"})),
        ("want", 1, dict(queue="q1", gpus=wsize, created=2, selector={"kind": "b" if elsewhere else "a"})),
    ]:
        if count:
            p, g = gangs(prefix, count, **{"cpu": "1", **kwargs})
            pods += p
            groups += g
    queues = [queue("q1", deserved={"nvidia.com/gpu": 4}), queue("q2", deserved={"nvidia.com/gpu": 4})]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _start(problem: Any) -> Any:
    """The decision the trade starts from: q2's pods on ``n0`` (``far`` on ``n1``), ``want`` waiting."""
    where = {g.key: "n0" for g in problem.gangs if g.key.startswith(("ns/give-", "ns/low-"))}
    return placed_on(problem, {**where, **{g.key: "n1" for g in problem.gangs if g.key.startswith("ns/far-")}})


def _key(problem: Any, key: str) -> int:
    return next(g.index for g in problem.gangs if g.key == key)


# (q1's running GPUs, q2's placed 1-GPU pods, want's GPUs, held's and give's priority, low,
# elsewhere, what goes)
CASES = [
    (3, 5, 1, 0, 0, False, False, "give"),  # q2 holds a GPU beyond its share: q1 reaches its own
    (3, 6, 1, 0, 0, False, False, "give"),  # two beyond: the same, one taken
    (1, 7, 1, 0, 0, False, False, "give"),  # q1 on a steeper piece: the same, q1 gains more
    (3, 4, 1, 0, 0, False, False, None),  # q2 at its share exactly: its loss is q1's gain
    (3, 5, 2, 0, 0, False, False, None),  # want asks 2 GPUs: the second costs q2 what q1 gains
    (3, 4, 1, 0, 0, False, True, "far"),  # want may use only n1: far goes, not a give pod on n0
    (3, 4, 1, 1000, 1000, True, False, "low"),  # give counts at the top tier, want does not
]


@pytest.mark.parametrize(("held", "give", "wsize", "hprio", "gprio", "low", "elsewhere", "goes"), CASES)
def test_the_step_trade_gives_a_queue_the_gpus_another_holds_for_nothing(
    held: int, give: int, wsize: int, hprio: int, gprio: int, low: bool, elsewhere: bool, goes: str | None
) -> None:
    snap = _case(held, give, wsize, hprio=hprio, gprio=gprio, low=low, elsewhere=elsewhere)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem)
    want = _key(problem, "ns/want-0")
    ranks = fair_ranks(problem)
    offered = [trade for tier in ranks for trade in step_trades(problem, start, tier, ranks[: ranks.index(tier)])]
    if goes is None:
        assert offered == []
    else:
        assert offered
        trade = offered[0]
        assert (trade.queue, trade.donor, trade.first) == ("q1", "q2", frozenset({want}))
        assert len(trade.drop) == 1
        assert problem.gangs[next(iter(trade.drop))].key.startswith(f"ns/{goes}-")
    before = _levels(problem, start)
    traded, rank = exchange_module._step_trades(
        problem,
        _levels,
        start,
        before,
        exchange_module.trading_tiers(problem, start),
        exchange_module._Run(problem, lambda: True),
    )
    assert rank == _levels(problem, traded)
    assert (want in traded.placed) is (goes is not None)
    if goes is not None:
        assert rank > before
        after, first = fair_share_values(problem, traded), fair_share_values(problem, start)
        order = sorted(first)
        assert [after[t] for t in order] > [first[t] for t in order]  # a tier rose
    else:
        assert traded is start


CLUSTERS = {
    "held": st.integers(0, 4),
    "give": st.integers(0, 7),
    "wsize": st.integers(1, 3),
    "hprio": st.sampled_from([0, 1000]),
    "gprio": st.sampled_from([0, 1000]),
    "low": st.booleans(),
    "elsewhere": st.booleans(),
}
"""The module docstring's clusters, as Hypothesis draws them (``_case``'s arguments)."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CLUSTERS)
def test_step_trades_never_rank_lower_and_the_cycle_validates(
    held: int, give: int, wsize: int, hprio: int, gprio: int, low: bool, elsewhere: bool
) -> None:
    snap = _case(held, give, wsize, hprio=hprio, gprio=gprio, low=low, elsewhere=elsewhere)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem)
    before = _levels(problem, start)
    traded, _ = exchange_module._step_trades(
        problem,
        _levels,
        start,
        before,
        exchange_module.trading_tiers(problem, start),
        exchange_module._Run(problem, lambda: True),
    )
    assert_a_kept_trade(problem, start, traded, _levels)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_solve_module, "greedy", lambda problem: _start(problem))
        decision = solve(snap, ALLOCATE, wall=False, skip=(SEARCH, SECOND_FILL))
    assert check(snap, decision, ALLOCATE) == []


# (q1's running GPUs, q2's placed 1-GPU pods, whether a trade is offered when q2 may lose nothing)
SPARE = [
    (3, 5, True),  # the GPU q2 gives is one beyond its share: it loses nothing
    (1, 4, False),  # q2 at its share gives a GPU q1 gains more with (a steeper piece): q2 loses a step
]


@pytest.mark.parametrize(("held", "give", "offered"), SPARE)
def test_spare_only_step_trades_take_only_what_the_giving_share_does_not_count(
    held: int, give: int, offered: bool
) -> None:
    problem = build_problem(_case(held, give, 1), ALLOCATE)
    start = _start(problem)
    ranks = fair_ranks(problem)
    assert step_trades(problem, start, ranks[0], [])  # a trade either way when q2 may lose
    assert bool(step_trades(problem, start, ranks[0], [], spare_only=True)) is offered
