"""The exchange run once more from the greedy's decision (:mod:`vcsat.solver.search.second_start`).

- A small cluster where the greedy leaves a queue's small pods on the empty nodes its waiting 8-GPU
  priority-1000 pod needs, and the search hands back a decision the exchange cannot raise: the
  exchange from the greedy's decision places the 8-GPU pod, and the cycle keeps it; with the
  second start's trades refused for time the cycle keeps the searched decision.
- A table of which decisions the second start keeps: only one ranked strictly higher than the
  first exchange's (a tie keeps the first).
- A Hypothesis property over random small clusters, the greedy's and the search's decisions each
  the greedy's with random gangs taken out: the second start never ranks lower than the first
  exchange's decision, keeps every node's room and every gang's minimum, and the cycle given those
  decisions ranks at least as high as the first exchange's decision and the greedy's, and decides
  something the validator accepts.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_exchange import _case, _counts_match, _keys, _placed, _room_kept
from test_gap_bound import ALLOCATE, FREE_GPUS, cluster, running_pods, waiting_jobs
from test_top_up import _without

from vcsat.model import Snapshot
from vcsat.solver import check, solve
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import greedy
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.exact import ExactResult
from vcsat.solver.search.exchange import exchange, trading_queues, trading_ranks, trading_tiers
from vcsat.solver.search.second_start import from_greedy

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic


def _copy(assignment: Assignment) -> Assignment:
    """The same decision as a different object (the search's, not the greedy's)."""
    out = Assignment()
    out.placed = set(assignment.placed)
    out.count = dict(assignment.count)
    out.shape_slots = dict(assignment.shape_slots)
    out.gang_slots = dict(assignment.gang_slots)
    return out


def _full_exchange(problem: Problem, assignment: Assignment) -> Assignment:
    queues, ranks = trading_queues(problem, assignment), trading_ranks(problem, assignment)
    return exchange(problem, assignment, _levels, queues, ranks, trading_tiers(problem, assignment))


def _cycle(
    snap: Snapshot,
    start: Callable[[Problem], Assignment],
    searched: Callable[[Problem], Assignment],
    monkeypatch: pytest.MonkeyPatch,
    first_exchange: Any = None,
    go: Callable[[], bool] | None = None,
) -> tuple[Any, tuple[int, ...], tuple[int, ...] | None]:
    """The cycle whose greedy (both fills) decides ``start(problem)`` and whose search hands back
    ``searched(problem)`` with no neighbourhood round after it; ``first_exchange`` stands in for
    the exchange on the searched decision, ``go`` for the second start's trades' question. Its
    decision, its first levels, and those of the first exchange's decision when the second start
    was tried (else None)."""
    seen: dict[str, Any] = {}
    explain = _solve_module.outcomes
    second = _solve_module.from_greedy

    def spy(problem: Any, assignment: Any) -> Any:
        seen["rank"] = _levels(problem, assignment)
        return explain(problem, assignment)

    def search(problem: Problem, *_: Any) -> ExactResult:
        return ExactResult(searched(problem), False)

    def second_start(*args: Any, **kwargs: Any) -> Any:
        if go is not None:
            kwargs["go"] = go
        problem, reached = args[0], args[2]
        seen["reached"] = _levels(problem, reached)
        return second(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(_solve_module, "greedy", start)
        patch.setattr(_solve_module, "greedy_by_gain", start)
        patch.setattr(_solve_module, "_search", search)
        patch.setattr(_solve_module, "improve", lambda *_, **__: None)
        patch.setattr(_solve_module, "outcomes", spy)
        patch.setattr(_solve_module, "from_greedy", second_start)
        if first_exchange is not None:
            patch.setattr(_solve_module, "exchange", first_exchange)
        decision = solve(snap, ALLOCATE)
    return decision, seen["rank"], seen.get("reached")


def _small_on_empty_nodes(problem: Problem) -> Assignment:
    small = _keys(problem, "small")
    return _placed(problem, {small[0]: "n0", small[1]: "n1"})


# (whether the second start's trades may run, whether the waiting 8-GPU pod is placed)
SECOND = [(True, True), (False, False)]


@pytest.mark.parametrize(("allowed", "placed"), SECOND)
def test_the_exchange_from_the_greedy_wins_over_the_searched_decision(
    allowed: bool, placed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = _case(0)
    problem = build_problem(snap, ALLOCATE)
    bad = _small_on_empty_nodes(problem)
    # The exchange from the greedy's decision places q1's 8-GPU pod.
    reached = _copy(bad)
    won = from_greedy(problem, bad, reached, _levels)
    assert won is not None
    assert _levels(problem, won) > _levels(problem, reached)
    # The cycle: the search hands back the same decision as another object, the exchange on it
    # finds nothing (as on a decision the search spread so that no trade frees a node).
    decision, rank, _ = _cycle(
        snap,
        _small_on_empty_nodes,
        lambda problem: _copy(_small_on_empty_nodes(problem)),
        monkeypatch,
        first_exchange=lambda problem, assignment, *_, **__: assignment,
        go=None if allowed else (lambda: False),
    )
    assert check(snap, decision, ALLOCATE) == []
    assert any(b.pod.split("/")[-1].startswith("big") for b in decision.bindings) is placed
    assert (rank == _levels(problem, won)) is placed
    assert (rank == _levels(problem, reached)) is not placed


def test_a_tie_or_a_lower_rank_keeps_the_first_exchange() -> None:
    snap = _case(0)
    problem = build_problem(snap, ALLOCATE)
    bad = _small_on_empty_nodes(problem)
    best = _full_exchange(problem, bad)
    assert _levels(problem, best) > _levels(problem, bad)
    # The first exchange reached what the second reaches: a tie, the first stands.
    assert from_greedy(problem, bad, best, _levels) is None
    # The greedy's decision has no trade to offer from itself when it is already the best.
    assert from_greedy(problem, best, best, _levels) is None
    # Every kind of trade skipped (a replay that skipped them): nothing runs.
    assert from_greedy(problem, bad, bad, _levels, kinds=(False, False, False)) is None


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    free=FREE_GPUS,
    running=running_pods(max_size=6, gpus=[1, 2, 4, 8]),
    waiting=waiting_jobs(5, pods=(1, 2), gpus=(1, 2, 8), count=(1, 6)),
    dropped=st.lists(st.booleans(), min_size=40, max_size=40),
    searched_dropped=st.lists(st.booleans(), min_size=40, max_size=40),
)
def test_the_second_start_never_ranks_lower_and_the_validator_accepts_the_cycle(
    free: list[int],
    running: list[tuple[str, int, int]],
    waiting: list[tuple[str, int, int, int, int]],
    dropped: list[bool],
    searched_dropped: list[bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snap = cluster(free, running, waiting)
    problem = build_problem(snap, ALLOCATE)
    first = greedy(problem)

    def start(problem: Problem) -> Assignment:
        return _without(problem, greedy(problem), {g for g in first.placed if dropped[g % len(dropped)]})

    def searched(problem: Problem) -> Assignment:
        return _without(problem, greedy(problem), {g for g in first.placed if searched_dropped[g % 40]})

    greedy_decision, search_decision = start(problem), searched(problem)
    reached = _full_exchange(problem, search_decision)
    won = from_greedy(problem, greedy_decision, reached, _levels)
    final = reached if won is None else won
    assert _levels(problem, final) >= _levels(problem, reached)
    assert _room_kept(problem, final)
    assert _counts_match(problem, final)
    decision, rank, before = _cycle(snap, start, searched, monkeypatch)
    assert check(snap, decision, ALLOCATE) == []
    assert rank >= _levels(problem, greedy_decision)
    if before is not None:
        # The second start was tried: the cycle never ranks below the first exchange's decision.
        assert rank >= before
