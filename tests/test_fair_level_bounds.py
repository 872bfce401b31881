"""Every level of the objective has a proven bound, the queue fair-share levels included.

The reported gap is over placed work, each priority's bound holding the fair-share levels at the
decision's values; a decision a little short at a fair-share level can then show a large gap. The
LP bounds each fair-share level too (:func:`vcsat.solver.search.bound.lp_bounds`), holding only the
more important ones, so the decision says where it may be short first (``SolverStats.levels``).
Here, on the small weighted clusters of ``test_gap_bound``:

- no feasible solution beats a level's bound while it keeps the more important levels' floors,
  whatever floors are set on the levels below (they are left loose: a better decision may give up
  a less important level to raise this one);
- the decision's ``levels`` are its own values, most important first, and add up to its objective
  and bound over placed work; an ``OPTIMAL`` decision reaches every bound.
"""

from __future__ import annotations

import pytest
from builders import gangs, node, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gap_bound import ALLOCATE, CASES, FREE_GPUS, cluster, running_pods, waiting_jobs

from vcsat.model import LevelBound, first_short
from vcsat.solver import solve
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.objectives.fairness import level_name as fair_level_name
from vcsat.solver.objectives.placement import level_name, placed_work
from vcsat.solver.problem import build_problem
from vcsat.solver.search.bound import lp_bounds, lp_level_bounds
from vcsat.solver.search.exact import solve_exact
from vcsat.solver.search.staged import SearchClock


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    free=FREE_GPUS,
    running=running_pods(max_size=6),
    waiting=waiting_jobs(max_size=5),
    below=st.lists(st.integers(0, 12_000), min_size=6, max_size=6),
)
def test_no_solution_beats_a_fair_level_bound_that_holds_its_floors(
    free: list[int],
    running: list[tuple[str, int, int]],
    waiting: list[tuple[str, int, int, int, int]],
    below: list[int],
) -> None:
    problem = build_problem(cluster(free, running, waiting), ALLOCATE)
    hint = greedy(problem)
    best = solve_exact(problem, hint, budget=20.0, clock=SearchClock(workers=1, wall=False)).assignment or hint
    # Asking for the fair-share levels' bounds leaves the placed-work bounds as they were: those
    # hold every fair-share level at the solution's values again.
    placed = {rank: placed_work(problem, hint, rank) for rank in {g.rank for g in problem.candidates}}
    at_hint = fair_share_values(problem, hint)
    assert lp_bounds(problem, placed, at_hint).placed == lp_level_bounds(problem, placed, at_hint)
    for solution, other in ((hint, best), (best, hint)):
        shares, others = fair_share_values(problem, solution), fair_share_values(problem, other)
        for rank in shares:
            # The levels above at the solution's values (it keeps them), those from this one down
            # at the other solution's or at any floor at all: a bound that read them would fall
            # below the solution where it gave up a level below to raise this one.
            for below_floor in (others, {level: below[level % len(below)] for level in shares}):
                floors = {level: shares[level] if level < rank else below_floor[level] for level in shares}
                bounds = lp_bounds(problem, {}, floors)
                assert bounds.fair_bounds()[rank] >= shares[rank], (rank, shares, floors, bounds.fair_bounds())


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_optimal_decision_reaches_every_level_bound(name: str) -> None:
    decision = solve(CASES[name], ALLOCATE)
    assert decision.solver.status == "OPTIMAL"
    assert decision.solver.levels
    assert all(level.bound == level.value for level in decision.solver.levels)
    assert first_short(decision.solver.levels) is None


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(free=FREE_GPUS, running=running_pods(max_size=6), waiting=waiting_jobs(max_size=5))
def test_the_decision_reports_its_own_values_level_by_level(
    free: list[int], running: list[tuple[str, int, int]], waiting: list[tuple[str, int, int, int, int]]
) -> None:
    snap = cluster(free, running, waiting)
    policy = ALLOCATE.model_copy(update={"relative_gap": 0.01, "time_limit_s": 1})
    decision = solve(snap, policy)
    problem = build_problem(snap, policy)
    # The decision's own assignment, read off its bindings (no evictions: ALLOCATE).
    bound = {binding.pod for binding in decision.bindings}
    decided = Assignment(
        count={c: sum(pod.key in bound for pod in pod_class.pods) for c, pod_class in enumerate(problem.classes)}
    )
    shares = fair_share_values(problem, decided)
    priorities = sorted({g.rank for g in problem.candidates}, reverse=True)
    expected = [(fair_level_name(problem, rank), shares[rank]) for rank in sorted(shares)]
    expected += [(level_name(p), placed_work(problem, decided, p)) for p in priorities]
    # Most important first, each the decision's own value, each bound at least that value.
    assert [(level.level, level.value) for level in decision.solver.levels] == expected
    assert all(level.bound >= level.value for level in decision.solver.levels)
    placed = decision.solver.levels[len(shares) :]
    assert sum(level.value for level in placed) == decision.solver.objective
    assert sum(level.bound for level in placed) == decision.solver.bound


FIRST_SHORT = [
    ([], None),
    ([("a", 5, 5), ("b", 7, 7)], None),
    ([("a", 5, 5), ("b", 7, 9), ("c", 1, 3)], "b"),
    ([("a", 5, 6), ("b", 7, 9)], "a"),
]


@pytest.mark.parametrize(("levels", "expected"), FIRST_SHORT)
def test_the_first_short_level_is_the_most_important_below_its_bound(
    levels: list[tuple[str, int, int]], expected: str | None
) -> None:
    found = first_short([LevelBound(level=name, value=value, bound=bound) for name, value, bound in levels])
    assert (found.level if found else None) == expected


def test_a_fair_level_bound_leaves_the_levels_below_it_loose() -> None:
    """One node with 4 free GPUs (q1 holds the other). q2's priority-1000 pod asks 1 GPU and most of the node's memory,
    so it shuts out q2's four priority-0 pods of 1 GPU each: the pod raises the first level (each
    queue's highest priority) where the four pods raise only the second, and more. A decision with
    the four pods is short at the first level by what the one pod would add there, which costs the
    second level: the first level's bound must not hold the second at that decision's value."""
    nodes = [node("n0", cpu=64, memory="512Gi", gpus=4), node("n1", cpu=64, memory="512Gi", gpus=4)]
    held, held_group = gangs("held", queue="q1", node="n1", gpus=4, cpu="1", created=-10)
    big, big_group = gangs("big", queue="q2", priority=1000, gpus=1, cpu="1", memory="480Gi", created=0)
    small, small_groups = gangs("small", 4, queue="q2", priority=0, gpus=1, cpu="1", memory="64Gi", created=10)
    queues = [queue("q1", weight=1), queue("q2", weight=1)]
    pods, groups = [*held, *big, *small], [*held_group, *big_group, *small_groups]
    snap = snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)
    problem = build_problem(snap, ALLOCATE)
    four = {c: len(pc.pods) for c, pc in enumerate(problem.classes) if problem.gangs[pc.gang].rank == 0}
    one = {c: len(pc.pods) for c, pc in enumerate(problem.classes) if problem.gangs[pc.gang].rank == 1000}
    mine = fair_share_values(problem, Assignment(count=four))
    theirs = fair_share_values(problem, Assignment(count=one))
    assert theirs[0] > mine[0] and theirs[1] < mine[1]  # the case is what it says
    bounds = lp_bounds(problem, {}, mine)
    assert bounds.fair_bounds()[0] >= theirs[0]
    assert bounds.fair_bounds()[1] >= mine[1]
