"""The placed-work bound over whole numbers (:mod:`vcsat.solver.search.whole_bound`): the LP's rows
with whole pods, gangs and fill points, proven by CP-SAT, where the LP is loose.

It must stay a bound: never below what a decision reaches at the same higher levels (here the
proven optimum of an exact search, on the small weighted clusters of ``test_gap_bound``), and
never above the LP's own. Where the LP meets a fair-share floor with part of a pod, it is tight.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from test_gap_bound import ALLOCATE, FREE_GPUS, cluster, running_pods, waiting_jobs

from vcsat.solver import solve
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.objectives.placement import placed_work
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.bound import lp_bounds
from vcsat.solver.search.exact import solve_exact
from vcsat.solver.search.staged import SearchClock
from vcsat.solver.search.whole_bound import whole_bounds

# Two nodes with 6 and 8 free GPUs; q2 waits with two gangs of three 3-GPU pods and one single
# 3-GPU pod at priority 1000, q3 (weight 4) with a gang of three 1-GPU pods at -100. Four 3-GPU
# pods fit (two a node), but q3's fair share comes first and takes a GPU of each node: three fit.
FRACTIONAL = cluster([4, 6], [("q3", 0, 2)], [("q2", 1000, 3, 3, 2), ("q3", -100, 3, 1, 1), ("q2", 1000, 1, 3, 1)])
GAP = ALLOCATE.model_copy(update={"relative_gap": 0.01})


def _values(problem: Problem, assignment: Assignment) -> tuple[dict[int, int], dict[int, int]]:
    ranks = {gang.rank for gang in problem.candidates}
    return {rank: placed_work(problem, assignment, rank) for rank in ranks}, fair_share_values(problem, assignment)


def _optimum(problem: Problem) -> Assignment:
    result = solve_exact(problem, Assignment(), budget=20.0, clock=SearchClock(workers=1, wall=False))
    assert result.assignment is not None and result.optimal
    return result.assignment


def _bounds(problem: Problem, assignment: Assignment) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    """The decision's placed work, the LP's bound and the whole-number bound per level."""
    placed, fair = _values(problem, assignment)
    lp = lp_bounds(problem, placed, fair)
    rows = lp.integer_rows()
    if rows is None:  # nothing can be placed: no level to bound
        return placed, lp.placed, {}
    return placed, lp.placed, whole_bounds(rows, placed, fair, rows.priorities, budget=5.0)


def test_the_lp_meeting_a_fair_share_floor_with_part_of_a_pod_is_closed() -> None:
    problem = build_problem(FRACTIONAL, ALLOCATE)
    placed, lp, whole = _bounds(problem, _optimum(problem))
    # At q3's share, the LP places almost four 3-GPU pods; whole pods, three.
    assert placed[1000] == 1125
    assert lp[1000] == 1488
    assert whole[1000] == 1125
    assert whole[-100] == lp[-100] == placed[-100] == 375


def test_the_cycle_reports_the_tighter_bound_and_a_replay_may_skip_it() -> None:
    decision = solve(FRACTIONAL, GAP, wall=False, skip=frozenset({"search"}))
    assert decision.solver.objective == 1500
    assert decision.solver.bound == 1500
    assert decision.solver.status == "WITHIN_GAP"
    assert [level.bound for level in decision.solver.levels][-2:] == [1125, 375]
    replay = solve(FRACTIONAL, GAP, wall=False, skip=frozenset({"search", "whole_bound"}))
    assert replay.solver.bound == 1863  # the LP's alone
    assert replay.solver.status == "FALLBACK"
    assert "whole_bound" in replay.solver.skipped
    assert decision.bindings == replay.bindings


def test_where_whole_pods_reach_the_lp_it_does_not_cut() -> None:
    # Nothing placed and no share to keep: the gang and the single pod take all four 3-GPU places,
    # what the LP reads too; the bound must stay there.
    problem = build_problem(FRACTIONAL, ALLOCATE)
    placed, lp, whole = _bounds(problem, Assignment())
    assert placed[1000] == 0
    assert whole[1000] == lp[1000] == 1500


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(free=FREE_GPUS, running=running_pods(max_size=6), waiting=waiting_jobs(max_size=4, gpus=(1, 2, 3, 4)))
def test_the_whole_bound_lies_between_the_optimum_and_the_lp(
    free: list[int], running: list[tuple[str, int, int]], waiting: list[tuple[str, int, int, int, int]]
) -> None:
    problem = build_problem(cluster(free, running, waiting), ALLOCATE)
    placed, lp, whole = _bounds(problem, _optimum(problem))
    for rank, bound in lp.items():
        assert placed[rank] <= whole[rank] <= bound, (rank, placed, whole, lp)
