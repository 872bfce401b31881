"""A trade's top-ups fill on in one room, and the trades' rank is summed in one walk: the same
decisions as before (benchmarks/RESULTS.md, session 30).

- :func:`vcsat.solver.search.top_up.top_up_in` hands back the room it filled (with the queues' room
  and held work), and the next top-up of its result fills on in it instead of making a room of its
  own from the result's slots and counting its pods again. Trades (a
  drop, a top-up of a few waiting gangs, a top-up of the rest, some kept as the next base) and whole
  exchanges decide as they do with a room made afresh for every top-up (:func:`top_up` each time,
  the code as it was, kept here as the reference); on the problems whose best fit reads the order
  nodes entered their buckets (:meth:`vcsat.solver.greedy.Room.order_read`) no room is filled on, on
  the others one room a trade is made instead of two.
- :func:`vcsat.solver.search.top_up.charged` counts a decision's pods per (queue, shape): the same
  room left and held work, queue by queue in the same order, as the count per pod class it
  replaced (kept here as the reference), on capped and uncapped clusters.
- :func:`vcsat.solver.search.top_up.waiting_gangs` finds the gangs a top-up fills by a set
  difference: the same gangs as the test per candidate it replaced; and the greedy's level targets
  sum the waiting gangs' asks off the memo in a loop (:func:`vcsat.solver.greedy._waiting_asks`):
  the same sums as :func:`vcsat.solver.greedy._asks` of each.
- :func:`vcsat.solver.objectives.fairness.placed_amount` sums a term's placed classes in a loop
  that passes over the unplaced ones: the same amounts as the sum over every class it replaced.
- :func:`vcsat.solver.solve._placed` sums each rank's placed work in one walk over the placed classes:
  the same values as :func:`vcsat.solver.objectives.placement.placed_work` rank by rank.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scripts import load_script
from test_greedy_index import generated, racked_clusters
from test_known_not_to_fit import POLICY, SLOW_OK, _facts

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.solver import greedy
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import charge
from vcsat.solver.objectives.fairness import fair_ranks, fair_terms, placed_amount
from vcsat.solver.objectives.placement import placed_work
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search import exchange as exchange_module
from vcsat.solver.search.exchange import exchange, trading_queues, trading_ranks, trading_tiers, without
from vcsat.solver.search.top_up import Filled, charged, top_up, top_up_in, waiting_gangs
from vcsat.solver.solve import _lexicographic, _placed


def _fresh(
    problem: Problem, assignment: Assignment, *, filled: Filled | None = None, less: Any = None, **options: Any
) -> tuple[Assignment, Filled | None]:
    """The reference: every top-up makes its own room, counts the queues' room and held work
    afresh and keeps its rankings (as before)."""
    return top_up(problem, assignment, **options), None


_ROOM_INIT = greedy.Room.__init__


def _holds(problem: Problem, result: Assignment, filled: Filled | None) -> None:
    """What the next top-up of ``result`` fills on from is what it would make afresh: the room's
    free room per node, and the queues' room left and held work (:func:`charged`)."""
    if filled is None:
        return
    fresh = object.__new__(greedy.Room)
    _ROOM_INIT(fresh, problem, result.shape_slots)  # not counted among the trades' rooms
    assert filled.room.free == fresh.free
    assert filled.room.whole == fresh.whole
    assert (filled.room.rows.rows == fresh.rows.rows).all()
    assert (filled.caps, filled.held) == charged(problem, result)


def _trades(problem: Problem, seed: int, top: Any) -> list[Any]:
    """Random trades on rooms of one problem (each trade's top-ups through ``top``, as the
    exchange makes them), then the whole exchange, from the greedy's decision."""
    first = greedy.greedy(problem)
    kept = greedy.KeptRankings(problem)
    rng = random.Random(seed)
    base = first
    out: list[Any] = []
    for _ in range(5):
        drop = rng.sample(sorted(base.placed), rng.randint(0, len(base.placed)))
        rest = without(problem, base, drop)
        if rest is None:
            out.append(None)
            continue
        waiting = sorted(g.index for g in problem.candidates if g.index not in rest.placed)
        only = set(rng.sample(waiting, min(len(waiting), rng.randint(0, 3))))
        then = set(rng.sample(waiting, min(len(waiting), rng.randint(0, 2))))
        trial, filled = top(problem, rest, only=only, kept=kept)
        _holds(problem, trial, filled)
        if then:
            trial, filled = top(problem, trial, only=then, kept=kept, filled=filled)
            _holds(problem, trial, filled)
        trial, filled = top(problem, trial, kept=kept, filled=filled)
        _holds(problem, trial, filled)
        if filled is not None:
            filled.room.keep_rankings()
        out.append(_facts(trial))
        if rng.random() < 0.5:
            base = trial
    queues, ranks, tiers = trading_queues(problem, first), trading_ranks(problem, first), trading_tiers(problem, first)
    out.append(_facts(exchange(problem, first, _lexicographic, queues, ranks, tiers)))
    return out


def _one_room_and_fresh(snap: Any, seed: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any], int, int]:
    """The trades filling on in one room, then with a room made afresh for every top-up; and how
    many rooms each made."""
    made = [0]
    init = greedy.Room.__init__

    def counting(self: greedy.Room, *args: Any, **kwargs: Any) -> None:
        made[0] += 1
        init(self, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(greedy.Room, "__init__", counting)
        one = _trades(build_problem(snap, POLICY), seed, top_up_in)
        rooms_one, made[0] = made[0], 0
        patch.setattr(exchange_module, "top_up_in", _fresh)
        fresh = _trades(build_problem(snap, POLICY), seed, _fresh)
    return one, fresh, rooms_one, made[0]


CASES = [
    ({"nodes": 30, "pending_jobs": 160, "seed": 1, "busy_gpu_fraction": 0.8, "multi_node_job_share": 0.3}, 3, False),
    ({"nodes": 24, "pending_jobs": 120, "seed": 4, "busy_gpu_fraction": 0.7, "multi_node_job_share": 0.4}, 5, True),
    ({"nodes": 40, "pending_jobs": 200, "seed": 8, "busy_gpu_fraction": 0.6, "multi_node_job_share": 0.2}, 11, False),
    ({"nodes": 16, "pending_jobs": 90, "seed": 2, "busy_gpu_fraction": 0.9, "multi_node_job_share": 0.5}, 7, True),
    ({"nodes": 24, "pending_jobs": 150, "seed": 5, "busy_gpu_fraction": 0.8, "ps_worker_job_share": 0.4}, 3, True),
    ({"nodes": 30, "pending_jobs": 200, "seed": 9, "busy_gpu_fraction": 0.7, "ps_worker_job_share": 0.3}, 4, False),
]
"""(generator options, trade seed, whether the problem's best fit reads the bucket order)."""


@pytest.mark.pure_only
@pytest.mark.parametrize(
    ("options", "seed", "order_read"),
    CASES,
    ids=["busy", "busy-gangs-ordered", "larger", "crowded-ordered", "two-tasks-ordered", "two-tasks-larger"],
)
def test_one_room_a_trade_decides_as_fresh_rooms(
    options: dict[str, Any], seed: int, order_read: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = generated(**options)
    problem = build_problem(snap, POLICY)
    assert greedy.Room(problem).order_read(problem) is order_read
    one, fresh, rooms_one, rooms_fresh = _one_room_and_fresh(snap, seed, monkeypatch)
    assert one == fresh
    assert any(facts is not None and facts[0] for facts in one), "the case places something"
    if order_read:
        assert rooms_one == rooms_fresh, "the order is read: a room afresh for every top-up"
    else:
        assert rooms_one < rooms_fresh, "the top-ups fill on in one room"


@pytest.mark.pure_only
@pytest.mark.parametrize(
    ("shape", "nodes", "seed"),
    [("capped", 30, 8), ("capped", 40, 5), ("capped", 40, 9), ("over-served", 40, 5), ("contended", 50, 2)],
)
def test_one_room_a_trade_on_capped_and_contended_shapes(
    shape: str, nodes: int, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = shapes.SHAPES[shape].instance(nodes=nodes, seed=seed)
    snap = snapshot_from_objects(instance["items"], source="generated")
    one, fresh, rooms_one, rooms_fresh = _one_room_and_fresh(snap, seed, monkeypatch)
    assert one == fresh
    assert rooms_one < rooms_fresh, "the top-ups fill on in one room"


@pytest.mark.pure_only
@settings(max_examples=20, deadline=None, suppress_health_check=SLOW_OK)
@given(case=racked_clusters())
def test_one_room_decides_as_fresh_rooms_on_random_clusters(
    case: tuple[Any, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    snap, seed = case
    one, fresh, _, _ = _one_room_and_fresh(snap, seed, monkeypatch)
    assert one == fresh


@st.composite
def _greedy_and_half(draw: st.DrawFn) -> tuple[Problem, Assignment, Assignment, random.Random]:
    """A random generated cluster's problem, its greedy decision, that decision without half its
    gangs, and the random source that chose them (seeded by the cluster's seed)."""
    nodes, jobs = draw(st.integers(2, 30)), draw(st.integers(5, 120))
    seed, busy = draw(st.integers(0, 10_000)), draw(st.sampled_from([0.2, 0.6, 0.9]))
    problem = build_problem(generated(nodes=nodes, pending_jobs=jobs, seed=seed, busy_gpu_fraction=busy), POLICY)
    decision = greedy.greedy(problem)
    rng = random.Random(seed)
    half = without(problem, decision, rng.sample(sorted(decision.placed), len(decision.placed) // 2))
    assert half is not None
    return problem, decision, half, rng


@settings(max_examples=30, deadline=None, suppress_health_check=SLOW_OK)
@given(case=_greedy_and_half())
def test_placed_work_summed_in_one_walk(case: tuple[Problem, Assignment, Assignment, random.Random]) -> None:
    problem, decision, half, _rng = case
    for assignment in (decision, half):
        ranks = {g.rank for g in problem.candidates}
        assert _placed(problem, assignment) == {rank: placed_work(problem, assignment, rank) for rank in ranks}


shapes = load_script("benchmarks/shapes.py", "shapes")


def _shape_problem(shape: str, nodes: int, seed: int) -> Problem:
    """The problem of a generated cluster of ``shape`` (benchmarks/shapes.py) at this size and seed."""
    instance = shapes.SHAPES[shape].instance(nodes=nodes, seed=seed)
    return build_problem(snapshot_from_objects(instance["items"], source="generated"), POLICY)


def _charged_per_class(problem: Problem, assignment: Assignment) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`charged` as it was: one charge per placed pod class."""
    caps = {name: dict(left) for name, left in problem.queue_room.items()}
    held = {queue: dict(usage) for queue, usage in problem.queue_usage.items()}
    for c, k in assignment.count.items():
        queue = problem.gangs[problem.classes[c].gang].queue
        request = problem.shapes[problem.classes[c].shape].request
        charge(problem, request, k, held.setdefault(queue, {}), [caps[name] for name in problem.caps_of(queue)])
    return caps, held


@settings(max_examples=30, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(4, 40),
    seed=st.integers(0, 10_000),
    shape=st.sampled_from(["capped", "over-served", "contended"]),
)
def test_charged_per_queue_and_shape_as_per_class(nodes: int, seed: int, shape: str) -> None:
    problem = _shape_problem(shape, nodes, seed)
    decision = greedy.greedy(problem)
    want_caps, want_held = _charged_per_class(problem, decision)
    for kept in (None, greedy.KeptRankings(problem)):
        caps, held = charged(problem, decision, kept)
        assert caps == want_caps and held == want_held
        assert list(held) == list(want_held), "the queues in the same order"
    if shape == "capped":
        assert any(left for left in caps.values()), "a capped queue's room is charged"


@settings(max_examples=30, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(4, 40),
    seed=st.integers(0, 10_000),
    shape=st.sampled_from(["weighted", "over-served", "contended"]),
)
def test_placed_amount_as_the_sum_over_every_class(nodes: int, seed: int, shape: str) -> None:
    problem = _shape_problem(shape, nodes, seed)
    decision = greedy.greedy(problem)
    terms = 0
    for tier in fair_ranks(problem):
        for _queue, name, _deserved, _held, asked in fair_terms(problem, tier):
            r = problem.resource_index(name)
            want = sum(decision.count.get(c, 0) * problem.shapes[problem.classes[c].shape].request[r] for c in asked)
            assert placed_amount(problem, decision, asked, r) == want
            terms += 1
    assert terms > 0


@settings(max_examples=30, deadline=None, suppress_health_check=SLOW_OK)
@given(case=_greedy_and_half())
def test_waiting_gangs_and_their_asks_as_before(case: tuple[Problem, Assignment, Assignment, random.Random]) -> None:
    problem, decision, rest, rng = case
    # A decision with pods of a gang it does not count as placed (as a search may hand one back).
    partial = Assignment(
        placed=set(rest.placed) - set(rng.sample(sorted(rest.placed), min(2, len(rest.placed)))),
        count=dict(rest.count),
        shape_slots=dict(rest.shape_slots),
        gang_slots=dict(rest.gang_slots),
    )
    for assignment in (decision, rest, partial):
        for only in (None, set(rng.sample(range(len(problem.gangs)), min(5, len(problem.gangs))))):
            gangs = problem.candidates if only is None else [problem.gangs[i] for i in only if i not in problem.blocked]
            want = {
                g.index
                for g in gangs
                if g.index not in assignment.placed and not any(assignment.count.get(c, 0) for c in g.classes)
            }
            for kept in (None, greedy.KeptRankings(problem)):
                assert waiting_gangs(problem, assignment, only, kept) == want
    room = greedy.Room(problem)
    for name in problem.resources:
        for gangs in (problem.candidates, rng.sample(problem.candidates, len(problem.candidates) // 2)):
            want_asks = sum(greedy._asks(problem, gang, name) for gang in gangs)
            assert greedy._waiting_asks(problem, room, gangs, name) == want_asks  # memo empty, then full
            assert greedy._waiting_asks(problem, room, gangs, name) == want_asks
