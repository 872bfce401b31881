"""Rankings carried from one greedy room to the next (:class:`vcsat.solver.greedy.KeptRankings`,
what the exchange's top-ups share): every carried ranking ranks every node as a ranking made afresh
in the room it is carried into, rooms made from random partial decisions with random takes and
gives between the reads; top-ups sharing them decide as top-ups that do not; and a cycle makes them
only when a trade runs (the greedy, which runs every cycle, keeps none)."""

from __future__ import annotations

import importlib
import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_exchange import _fair_case, _keys
from test_greedy_index import generated
from test_node_rows import _random_steps
from trade_checks import placed_on

from vcsat.model import Policy
from vcsat.solver import check, greedy, solve
from vcsat.solver.deadline import SEARCH, SECOND_FILL, trades_cut
from vcsat.solver.greedy import KeptRankings, Room
from vcsat.solver.pricing import scarcity
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.exchange import without
from vcsat.solver.search.top_up import top_up

POLICY = Policy(time_limit_s=2)
_solve_module = importlib.import_module("vcsat.solver.solve")
SLOW_OK = [HealthCheck.too_slow, HealthCheck.filter_too_much]


def _problem(seed: int, busy: float) -> tuple[Problem, scarcity.Scarcity]:
    problem = build_problem(generated(nodes=30, pending_jobs=40, seed=seed % 50, busy_gpu_fraction=busy), POLICY)
    scarce = scarcity.for_problem(problem)
    assume(scarce is not None)
    assert scarce is not None
    return problem, scarce


@settings(max_examples=20, deadline=None, suppress_health_check=SLOW_OK)
@given(
    seed=st.integers(0, 10_000),
    busy=st.sampled_from([0.2, 0.6, 0.9]),
    rooms=st.integers(2, 4),
    steps=st.integers(0, 12),
    few=st.sampled_from([0, 16]),
)
def test_a_carried_ranking_ranks_as_one_made_afresh(seed: int, busy: float, rooms: int, steps: int, few: int) -> None:
    """Rooms one after another, each from the greedy's decision less random gangs, sharing one
    :class:`KeptRankings`: in each, shapes read in a random order with random takes and gives
    between the reads (so a carried ranking meets changes made since another was carried from
    the same room, and changes it had not read when kept): each read's ranks, and the node it
    picks, are a fresh ranking's in that room."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(greedy, "FEW_CHANGED", few)  # changed nodes priced in Python, or through the rows
        problem, scarce = _problem(seed, busy)
        decision = greedy.greedy(problem)
        rng = random.Random(seed)
        kept = KeptRankings(problem)
        carried = 0
        for _ in range(rooms):
            drop = rng.sample(sorted(decision.placed), rng.randint(0, len(decision.placed)))
            rest = without(problem, decision, drop)
            assume(rest is not None)
            assert rest is not None
            room = Room(problem, rest.shape_slots, kept)
            for shape in rng.sample(problem.shapes, min(6, len(problem.shapes))):
                _random_steps(problem, [room], rng, rng.randint(0, steps))
                carried += shape.index in kept._kept
                picked = room.cheapest_fit(scarce, shape)
                fresh = greedy._Ranking(room, scarce, shape)
                assert room._ranking(scarce, shape).ranks.tolist() == fresh.ranks.tolist()
                assert picked == fresh.best(room)
            _random_steps(problem, [room], rng, steps)  # changes no ranking has read when kept
            room.keep_rankings()
        assume(carried > 0)


@settings(max_examples=15, deadline=None, suppress_health_check=SLOW_OK)
@given(seed=st.integers(0, 10_000), busy=st.sampled_from([0.2, 0.6, 0.9]), rounds=st.integers(1, 4))
def test_top_ups_sharing_rankings_decide_as_top_ups_that_do_not(seed: int, busy: float, rounds: int) -> None:
    """The greedy, then the exchange's two top-ups per trade over several trades, with the
    rankings carried from the first trade's first room on and without: the same decisions, step
    by step."""
    problem, _ = _problem(seed, busy)
    kept = KeptRankings(problem)
    decision = greedy.greedy(problem)
    rng = random.Random(seed)
    for _ in range(rounds):
        drop = rng.sample(sorted(decision.placed), rng.randint(1, max(1, len(decision.placed))))
        rest = without(problem, decision, drop)
        assume(rest is not None)
        assert rest is not None
        first = set(rng.sample([g.index for g in problem.candidates], min(3, len(problem.candidates))))
        plain = top_up(problem, top_up(problem, rest, only=first))
        shared = top_up(problem, top_up(problem, rest, only=first, kept=kept), kept=kept)
        assert (shared.placed, shared.count, shared.shape_slots, shared.gang_slots) == (
            plain.placed,
            plain.count,
            plain.shape_slots,
            plain.gang_slots,
        )


def test_rankings_kept_for_another_problem_are_refused() -> None:
    one = build_problem(generated(nodes=6, pending_jobs=6, seed=1, busy_gpu_fraction=0.5), POLICY)
    other = build_problem(generated(nodes=6, pending_jobs=6, seed=2, busy_gpu_fraction=0.5), POLICY)
    with pytest.raises(ValueError, match="another problem"):
        Room(one, None, KeptRankings(other))


# (the trades the cycle may run, rankings made): the fair case with the search skipped, whose first
# trade is the fair one that places q3's 8-GPU pod; with none allowed, nothing keeps a ranking
MADE = [(0, 0), (1, 1), (None, 1)]


# pure_only: counts the rankings made by wrapping KeptRankings.__init__ (a native class compiled).
@pytest.mark.pure_only
@pytest.mark.parametrize(("ran", "made"), MADE)
def test_rankings_are_made_only_when_a_trade_runs(ran: int | None, made: int, monkeypatch: pytest.MonkeyPatch) -> None:
    snap = _fair_case("q1", 8)
    problem = build_problem(snap, POLICY)
    small = _keys(problem, "small")
    counted: list[Problem] = []
    made_with = KeptRankings.__init__

    def counting(self: KeptRankings, problem: Problem) -> None:
        counted.append(problem)
        made_with(self, problem)

    cut = () if ran is None else (trades_cut(ran),)
    with monkeypatch.context() as patch:
        patch.setattr(KeptRankings, "__init__", counting)
        plain = greedy.greedy(problem)
        assert counted == []  # the greedy alone
        patch.setattr(_solve_module, "greedy", lambda p: placed_on(p, {small[0]: "n0", small[1]: "n1"}))
        decision = solve(snap, POLICY, wall=False, skip=(SEARCH, SECOND_FILL, *cut))
    assert plain.placed
    assert check(snap, decision, POLICY) == []
    assert len(counted) == made
