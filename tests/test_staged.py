"""The staged CP-SAT loop (solver/search/staged.py) and the gap it lets the cycle report.

The loop: each stage is solved, held at what it found and the next hinted; the lexicographic
optimum is what comes out (checked against brute force on small models), a stage never gives back
what an earlier one won, the solver's wall limit never passes the cycle's deadline, and a deadline
already gone stops the run and says so. The gap: on small clusters with weighted and capped
queues and priorities, solved to OPTIMAL, the reported bound is the objective.
"""

from __future__ import annotations

import itertools
import time

import pytest
from builders import gangs, node, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from vcsat.model import Policy, relative_gap
from vcsat.solver import check, solve
from vcsat.solver.search.levels import make_level, plan_stages
from vcsat.solver.search.staged import (
    MAX_AUTO_WORKERS,
    WALL_SLACK_SECONDS,
    SearchClock,
    new_solver,
    solve_stages,
    workers_for,
)

# --- the loop ---------------------------------------------------------------------------------


def _lexicographic_model(
    uppers: list[int], capacity: int, weights: list[list[int]]
) -> tuple[cp_model.CpModel, list[cp_model.IntVar], list]:
    """Variables x_i in [0, uppers[i]] with Σ x_i ≤ capacity; level k maximises Σ weights[k][i]·x_i."""
    cp = cp_model.CpModel()
    xs = [cp.new_int_var(0, u, f"x{i}") for i, u in enumerate(uppers)]
    cp.add(sum(xs) <= capacity)
    upper = {x.index: u for x, u in zip(xs, uppers, strict=True)}
    levels = [
        make_level(f"level {k}", [(x, w) for x, w in zip(xs, row, strict=True)], upper_of=upper, measure=lambda p, a: 0)
        for k, row in enumerate(weights)
    ]
    for x in xs:
        cp.add_hint(x, 0)
    return cp, xs, levels


def _brute_force(uppers: list[int], capacity: int, weights: list[list[int]]) -> tuple[int, ...]:
    best: tuple[int, ...] | None = None
    for xs in itertools.product(*(range(u + 1) for u in uppers)):
        if sum(xs) > capacity:
            continue
        value = tuple(sum(w * x for w, x in zip(row, xs, strict=True)) for row in weights)
        best = value if best is None or value > best else best
    assert best is not None
    return best


@pytest.mark.parametrize(
    ("uppers", "capacity", "weights", "expected"),
    [
        pytest.param([3, 3], 4, [[1, 0], [0, 1]], (3, 1), id="first level first"),
        pytest.param([3, 3], 4, [[0, 1], [1, 0]], (3, 1), id="order is the levels'"),
        pytest.param([2, 2, 2], 3, [[1, 1, 0], [0, 0, 1], [-1, 0, 0]], (3, 0, -1), id="ties broken below"),
        pytest.param([5], 3, [[2], [-1]], (6, -3), id="a later level cannot give back"),
    ],
)
def test_stages_reach_the_lexicographic_optimum(
    uppers: list[int], capacity: int, weights: list[list[int]], expected: tuple[int, ...]
) -> None:
    cp, _xs, levels = _lexicographic_model(uppers, capacity, weights)
    stages = [stage for level in levels for stage in plan_stages([level])]  # one stage per level
    clock = SearchClock()
    solver = new_solver(Policy(num_workers=1), clock)
    values, complete = solve_stages(cp, solver, stages, clock, plan=lambda number, stage: 5.0)
    assert complete and values is not None and not clock.wall_stopped
    found = tuple(sum(coef * values[var.index] for var, coef in level.terms) for level in levels)
    assert found == expected
    assert clock.spent > 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    uppers=st.lists(st.integers(0, 3), min_size=1, max_size=4),
    capacity=st.integers(0, 8),
    rows=st.integers(1, 3),
    data=st.data(),
)
def test_stages_match_brute_force(uppers: list[int], capacity: int, rows: int, data: st.DataObject) -> None:
    weights = [data.draw(st.lists(st.integers(-3, 3), min_size=len(uppers), max_size=len(uppers))) for _ in range(rows)]
    cp, _xs, levels = _lexicographic_model(uppers, capacity, weights)
    stages = [stage for level in levels for stage in plan_stages([level])]
    clock = SearchClock()
    values, complete = solve_stages(
        cp, new_solver(Policy(num_workers=1), clock), stages, clock, plan=lambda number, stage: 5.0
    )
    if not stages:
        assert values is None
        return
    assert complete and values is not None
    found = tuple(sum(coef * values.get(var.index, 0) for var, coef in level.terms) for level in levels)
    assert found == _brute_force(uppers, capacity, weights)


def test_a_skipped_stage_is_not_solved() -> None:
    cp, xs, levels = _lexicographic_model([3, 3], 4, [[1, 0], [0, 1]])
    stages = [stage for level in levels for stage in plan_stages([level])]
    clock = SearchClock()
    planned: list[int] = []

    def plan(number: int, stage: object) -> float | None:
        planned.append(number)
        return None if number == 0 else 5.0

    values, complete = solve_stages(cp, new_solver(Policy(num_workers=1), clock), stages, clock, plan=plan)
    assert planned == [0, 1] and complete and values is not None
    assert values[xs[1].index] == 3  # the first stage never ran: the second took all it could


# --- the clocks ---------------------------------------------------------------------------------


def test_the_wall_limit_never_passes_the_deadline() -> None:
    """The parameters CP-SAT gets carry the cycle's deadline, not only the safety net."""
    cp, _xs, levels = _lexicographic_model([3, 3], 4, [[1, 0], [0, 1]])
    stages = plan_stages(levels)
    clock = SearchClock(deadline=time.monotonic() + 0.5)
    solver = new_solver(Policy(num_workers=1), clock)
    solve_stages(cp, solver, stages, clock, plan=lambda number, stage: 30.0)
    assert solver.parameters.max_deterministic_time == 30.0
    assert 0 < solver.parameters.max_time_in_seconds <= 0.5
    # Without a deadline, the safety net alone: twice the deterministic limit and the slack.
    free = SearchClock()
    assert free.wall_limit(2.0) == 2 * 2.0 + WALL_SLACK_SECONDS


def test_a_deadline_gone_stops_the_run_and_says_so() -> None:
    cp, _xs, levels = _lexicographic_model([3, 3], 4, [[1, 0], [0, 1]])
    clock = SearchClock(deadline=time.monotonic() - 1.0)
    values, complete = solve_stages(
        cp, new_solver(Policy(num_workers=1), clock), plan_stages(levels), clock, plan=lambda n, s: 5.0
    )
    assert values is None and not complete
    assert clock.wall_stopped and clock.spent == 0.0


@pytest.mark.parametrize(
    ("configured", "cores", "expected"),
    [
        pytest.param(3, 16, 3, id="the policy's"),
        pytest.param(None, 1, 1, id="one core: one worker"),
        pytest.param(None, 2, 1, id="two cores: one worker, a core for the rest"),
        pytest.param(None, 4, 3, id="the cores available less one"),
        pytest.param(None, 64, MAX_AUTO_WORKERS, id="at most eight"),
    ],
)
def test_workers(monkeypatch: pytest.MonkeyPatch, configured: int | None, cores: int, expected: int) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert workers_for(Policy(num_workers=configured)) == expected
    clock = SearchClock(workers=expected)
    solver = new_solver(Policy(), clock)
    assert solver.parameters.num_workers == expected
    assert solver.parameters.interleave_search == (expected > 1)


def test_the_decision_records_the_search() -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="4", memory="16Gi")],
        pods=gangs("j", 3, cpu="1")[0],
        groups=gangs("j", 3, cpu="1")[1],
    )
    decision = solve(snap, Policy(time_limit_s=5, num_workers=2))
    stats = decision.solver
    assert stats.workers == 2
    assert stats.deterministic_budget > 0
    assert 0 <= stats.deterministic_time <= stats.deterministic_budget + 1.0
    assert stats.wall_stopped is False
    # A cycle started long ago has no time left: it says its deadline stopped the search.
    late = solve(snap, Policy(time_limit_s=1, num_workers=1), started=time.monotonic() - 100)
    assert check(snap, late, Policy(time_limit_s=1)) == []


# --- the gap ------------------------------------------------------------------------------------


def _weighted_cluster(weights: list[int], cap: int | None, jobs: list[tuple[int, int, int]], nodes: int):
    """Queues q0.. with ``weights`` (q0 capped at ``cap`` GPUs when given); ``jobs``: per job
    (queue, GPUs per pod, priority), gangs of two pods; 4-GPU nodes."""
    pods, groups = [], []
    for j, (q, gpus, priority) in enumerate(jobs):
        more_pods, more_groups = gangs(
            f"job{j}", 1, size=2, queue=f"q{q}", gpus=gpus, cpu="1", priority=priority, created=float(j)
        )
        pods += more_pods
        groups += more_groups
    queues = [
        queue(f"q{i}", weight=w, capability={"nvidia.com/gpu": cap} if (i == 0 and cap is not None) else None)
        for i, w in enumerate(weights)
    ]
    return snapshot(
        nodes=[node(f"n{i}", cpu="16", memory="64Gi", gpus=4) for i in range(nodes)],
        pods=pods,
        groups=groups,
        queues=queues,
    )


@pytest.mark.parametrize(
    ("weights", "cap", "jobs"),
    [
        pytest.param([1, 4], None, [(0, 1, 0), (1, 2, 0), (1, 1, 100), (0, 2, 0)], id="weighted"),
        pytest.param([4, 1, 2], 2, [(0, 1, 0), (0, 1, 0), (1, 2, 100), (2, 1, 0)], id="capped"),
        pytest.param([1, 1, 4, 2, 3], None, [(q, 1 + q % 2, 100 * (q % 3)) for q in range(5)], id="five queues"),
    ],
)
def test_an_optimal_decision_reports_its_objective_as_bound(
    weights: list[int], cap: int | None, jobs: list[tuple[int, int, int]]
) -> None:
    snap = _weighted_cluster(weights, cap, jobs, nodes=2)
    policy = Policy(time_limit_s=20, num_workers=1)
    decision = solve(snap, policy)
    assert check(snap, decision, policy) == []
    assert decision.solver.bound >= decision.solver.objective
    if decision.solver.status == "OPTIMAL":
        assert decision.solver.bound == decision.solver.objective


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    weights=st.lists(st.integers(1, 4), min_size=2, max_size=3),
    cap=st.one_of(st.none(), st.integers(1, 6)),
    jobs=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 2), st.sampled_from([0, 100])), min_size=1, max_size=5),
    nodes=st.integers(1, 2),
)
def test_the_gap_is_proven_and_closes_on_tiny_clusters(
    weights: list[int], cap: int | None, jobs: list[tuple[int, int, int]], nodes: int
) -> None:
    """Tiny clusters with weighted (and maybe capped) queues, solved with time to spare: the
    decision is valid, its bound is at least its objective, and the gap closes (the search proves
    placed work optimal given the fair shares, or the bound meets it)."""
    jobs = [(q % len(weights), gpus, priority) for q, gpus, priority in jobs]
    snap = _weighted_cluster(weights, cap, jobs, nodes=nodes)
    policy = Policy(time_limit_s=20, num_workers=1)
    decision = solve(snap, policy)
    assert check(snap, decision, policy) == []
    stats = decision.solver
    assert stats.bound >= stats.objective
    assert relative_gap(stats.objective, stats.bound) == 0.0


@pytest.mark.parametrize(
    ("reported", "stages"),
    [
        pytest.param([False, False, True, True, False], [2, 3], id="placed work starts its own stage"),
        pytest.param([True, True, False], [3], id="tie-breaks below placed work share its stage"),
        pytest.param([False, False], [2], id="no placed work: one stage"),
        pytest.param([True, False, True], [2, 1], id="placed work below a tie-break starts again"),
    ],
)
def test_placed_work_never_shares_a_stage_with_the_levels_above_it(reported: list[bool], stages: list[int]) -> None:
    cp = cp_model.CpModel()
    x = cp.new_int_var(0, 3, "x")
    levels = [
        make_level(f"l{i}", [(x, 1)], upper_of={x.index: 3}, measure=lambda p, a: 0, reported=r)
        for i, r in enumerate(reported)
    ]
    assert [len(stage.levels) for stage in plan_stages(levels)] == stages
