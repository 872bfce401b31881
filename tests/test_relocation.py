"""The relocation trade (:mod:`vcsat.solver.search.relocation`): movers off a confined gang's nodes.

- A table of small clusters where a queue below its deserved share waits with a 4-GPU pod only the
  ``h100`` node takes, whose 4-GPU hole holds another queue's 1-GPU pod (eligible anywhere) that is
  at its own deserved share: every other trade of the exchange takes that pod out, places the
  4-GPU pod and finds no room left for the 1-GPU one, which lowers the tier more than the 4-GPU
  pod raises it (q3 deserves 8 GPUs: one pod takes it half way), so nothing is kept; the
  relocation moves the 1-GPU pod to the ``a100`` node, into the room a queue above its deserved
  share held there (taken out: no fair-share level needs it), and the tier rises. The exchange
  without the relocation leaves the 4-GPU pod out; the cycle from that decision places it, and
  the validator accepts it.
- Where it must not run: the ``a100`` node's room held by a queue below its share (no level may
  lose it, and with the mover lost the tier would fall: no trade is offered), or no room for the
  mover anywhere before the cycle (it is then no more flexible than the waiting pod: nothing to
  move); the decision stands.
- The tier's change a trade that loses movers is judged by: each queue's utility before and after.
- A Hypothesis property over such clusters with random room, holders, and movers (count, queue,
  priority): the exchange ranks at least as high as the decision it starts from, keeps every
  node's room and every gang's count whole or nothing, and the cycle decides something the
  validator accepts.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from builders import gangs, node, queue, snapshot
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_gap_bound import ALLOCATE
from trade_checks import placed_on

from vcsat.model import Snapshot
from vcsat.solver import check, solve
from vcsat.solver.deadline import SEARCH, SECOND_FILL
from vcsat.solver.problem import build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.exchange import exchange, trading_tiers
from vcsat.solver.search.relocation import relocations, tier_change

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic


def _h100_and_a100() -> list[Any]:
    """The two nodes of every case: an 8-GPU H100 node (the confined pods' only kind) and an 8-GPU
    A100 node."""
    return [
        node("h0", cpu=64, memory="512Gi", gpus=8, labels={"kind": "h100"}),
        node("a0", cpu=64, memory="512Gi", gpus=8, labels={"kind": "a100"}),
    ]


def _case(holder: str, a100_busy: int, *, extra: bool = True) -> Snapshot:
    """``h0`` (h100, 8 GPUs) runs 4 of q1's; ``a0`` (a100, 8 GPUs) runs ``a100_busy`` of q1's.
    Waiting: q3's two 4-GPU pods that only h100 nodes take (its deserved share 8 GPUs, so one
    pod takes it half way, raising its share less than the mover's queue loses from a full share),
    q5's 1-GPU pod (its whole ask), and, when ``extra``, one 1-GPU priority-1000 pod of
    ``holder``'s. q1 weight 1, q3 4, q5 1."""
    nodes = _h100_and_a100()
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("run", 1, dict(queue="q1", node="h0", gpus=4, created=-100)),
        ("busy", 1 if a100_busy else 0, dict(queue="q1", node="a0", gpus=a100_busy, created=-100)),
        ("mover", 1, dict(queue="q5", priority=0, gpus=1, created=1)),
        ("extra", 1 if extra else 0, dict(queue=holder, priority=1000, gpus=1, created=2, cpu="2")),
        ("big", 2, dict(queue="q3", priority=0, gpus=4, created=3, selector={"kind": "h100"})),
    ]:
        if count:
            p, g = gangs(prefix, count, **{"cpu": "1", **kwargs})
            pods += p
            groups += g
    queues = [queue("q1", weight=1), queue("q3", weight=4), queue("q5", weight=1)]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _start(problem: Any, *, extra: bool = True) -> Any:
    """The decision the trade starts from: the mover in h0's hole, the extra pod on a0."""
    where = {"ns/mover-0": "h0"}
    if extra:
        where["ns/extra-0"] = "a0"
    return placed_on(problem, where)


def _big(problem: Any) -> int:
    return next(g.index for g in problem.gangs if g.key == "ns/big-0")


def _nothing(*args: Any, **kwargs: Any) -> Any:
    return iter(())


# (who holds the a100 node's last GPU, GPUs q1 runs on a0 before the cycle, whether the relocation
# places q3's 4-GPU pod)
CASES = [
    ("q1", 7, True),  # q1 above its share: its pod is taken out for the mover
    ("q3", 7, False),  # q3's (below its share): no level may lose it, so nothing to take out
]


# pure_only: turns the exchange's other trades off by swapping them, which the compiled exchange
# calls bound (with them on, one case's gang is placed by another trade).
@pytest.mark.pure_only
@pytest.mark.parametrize(("holder", "busy", "placed"), CASES)
def test_the_relocation_places_the_confined_gang_the_other_trades_cannot(
    holder: str, busy: int, placed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = _case(holder, busy)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem)
    big = _big(problem)
    tiers = trading_tiers(problem, start)
    assert tiers
    with monkeypatch.context() as patch:
        patch.setattr(exchange_module, "relocations", _nothing)
        # The clearing and re-pack trades make the same move here (the mover's room on a0 is the
        # extra pod's, which no tier counts where q1 holds it): left out, as the relocation alone
        # is asked of.
        patch.setattr(exchange_module, "clearing_trade", lambda *args, **kwargs: None)
        patch.setattr(exchange_module, "repack_trade", lambda *args, **kwargs: None)
        old = exchange(problem, start, _levels, [], [], tiers)
    assert big not in old.placed  # no other trade places it
    spare = exchange_module._not_needed(problem, start, 10**9)
    offered = list(relocations(problem, start, tiers, spare, set()))
    assert bool(offered) is placed  # not offered where the tier would fall with the mover lost
    traded = exchange(problem, start, _levels, [], [], tiers)
    assert (big in traded.placed) is placed
    if placed:
        assert _levels(problem, traded) > _levels(problem, start)
        assert any(g.key == "ns/mover-0" for g in problem.gangs if g.index in traded.placed)  # moved, not dropped
    else:
        assert traded is start
    with monkeypatch.context() as patch:
        patch.setattr(_solve_module, "greedy", lambda problem: _start(problem))
        decision = solve(snap, ALLOCATE, wall=False, skip=(SEARCH, SECOND_FILL))
    assert check(snap, decision, ALLOCATE) == []
    assert any(b.pod.startswith("ns/big-0") for b in decision.bindings) is placed


def test_no_relocation_where_the_mover_has_no_room_anywhere() -> None:
    """a0 full before the cycle and nothing on it to take out: no trade is offered at all."""
    snap = _case("q1", 8, extra=False)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem, extra=False)
    tiers = trading_tiers(problem, start)
    assert list(relocations(problem, start, tiers, set(), set())) == []
    assert exchange(problem, start, _levels, [], [], tiers) is start


def test_the_relocation_names_the_mover_and_the_gang_it_makes_room_with() -> None:
    snap = _case("q1", 7)
    problem = build_problem(snap, ALLOCATE)
    start = _start(problem)
    extra = next(g.index for g in problem.gangs if g.key == "ns/extra-0")
    mover = next(g.index for g in problem.gangs if g.key == "ns/mover-0")
    trades = list(relocations(problem, start, trading_tiers(problem, start), {extra}, set()))
    assert [(t.gang, t.movers, t.victims) for t in trades] == [(_big(problem), {mover}, {extra})]


# (GPUs more per queue, the tier's change): q3 from 0 to half its deserved 8 GPUs, q5 from its
# whole deserved 1 GPU to none, both, and q1, which the tier does not measure
TIER_CHANGES = [
    ({"q3": 4}, 1750),
    ({"q5": -1}, -2500),
    ({"q3": 4, "q5": -1}, -750),
    ({"q3": 8}, 2500),
    ({"q1": 5}, 0),
]


@pytest.mark.parametrize(("gpus", "change"), TIER_CHANGES)
def test_the_tier_change_reads_each_queue_s_utility_before_and_after(gpus: dict[str, int], change: int) -> None:
    problem = build_problem(_case("q1", 7), ALLOCATE)
    assert tier_change(problem, _start(problem), 0, gpus) == change


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    h0_busy=st.integers(0, 7),
    a0_busy=st.integers(0, 8),
    holder=st.sampled_from(["q1", "q3", "q5"]),
    mover_queue=st.sampled_from(["q1", "q3", "q5"]),
    mover_priority=st.sampled_from([0, 1000]),
    movers=st.integers(1, 3),
    big=st.integers(2, 6),
)
# A cluster where a relocation is offered that ranks lower than the decision it starts from (found
# by Hypothesis against a mutant keeping relocations whatever their rank): always tried.
@example(h0_busy=0, a0_busy=7, holder="q3", mover_queue="q3", mover_priority=1000, movers=3, big=6)
def test_relocations_never_rank_lower_and_the_cycle_validates(
    h0_busy: int, a0_busy: int, holder: str, mover_queue: str, mover_priority: int, movers: int, big: int
) -> None:
    nodes = _h100_and_a100()
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, count, kwargs in [
        ("run", 1 if h0_busy else 0, dict(queue="q1", node="h0", gpus=h0_busy, created=-100)),
        ("busy", 1 if a0_busy else 0, dict(queue="q1", node="a0", gpus=a0_busy, created=-100)),
        ("mover", movers, dict(queue=mover_queue, priority=mover_priority, gpus=1, created=1)),
        ("extra", 1, dict(queue=holder, priority=1000, gpus=1, created=10, cpu="2")),
        ("big", 1, dict(queue="q3", priority=0, gpus=big, created=20, selector={"kind": "h100"})),
    ]:
        if count:
            p, g = gangs(prefix, count, **{"cpu": "1", **kwargs})
            pods += p
            groups += g
    queues = [queue("q1", weight=1), queue("q3", weight=4), queue("q5", weight=1)]
    snap = snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)
    problem = build_problem(snap, ALLOCATE)
    # The start: movers in h0's room as far as it goes, the extra pod on a0 when it has room.
    where: dict[str, str] = {}
    room = {"h0": 8 - h0_busy, "a0": 8 - a0_busy}
    for key in [*(f"ns/mover-{i}" for i in range(movers)), "ns/extra-0"]:
        for name in ("h0", "a0") if key.startswith("ns/mover") else ("a0",):
            if room[name] >= 1:
                where[key], room[name] = name, room[name] - 1
                break
    start = placed_on(problem, where)
    tiers = trading_tiers(problem, start)
    traded = exchange(problem, start, _levels, [], [], tiers)
    assert _levels(problem, traded) >= _levels(problem, start)
    left = problem.room_left(traded.shape_slots)
    assert all(amount >= 0 for row in left for amount in row)
    for gang in problem.gangs:
        counts = [traded.count.get(c, 0) for c in gang.classes]
        assert all(k == len(problem.classes[c].pods) for c, k in zip(gang.classes, counts, strict=True)) or not any(
            counts
        )
        assert (gang.index in traded.placed) == any(counts)
    decision = solve(snap, ALLOCATE, wall=False, skip=(SEARCH, SECOND_FILL))
    assert check(snap, decision, ALLOCATE) == []
