"""The greedy's fair-share fill (:func:`vcsat.solver.greedy._fill_tier`) follows the level's utility.

A fair-share level sums each queue's concave utility of its filled share (the fraction of its
deserved amount it holds), so one more GPU adds the utility's slope divided by the queue's
deserved amount: within one slope a queue that deserves less gains more per GPU, and filling all
queues to equal shares gives that up (over-served clusters, where the free room is short of what
the waiting queues deserve, showed it: benchmarks/RESULTS.md, session 10). When the greedy's
decision is not within the policy's tolerance of its bound, the cycle fills the levels the other
way too and starts from the decision the objective ranks higher (``solve.warm_start``).

The fill by gain weighs a queue's next gang whole (the level's rise over the share it takes,
per GPU it takes), not the slope where the queue stands: a big gang that would carry the queue
across the utility's flatter pieces or past its share gains less per GPU than that slope says.

The equal-shares fill first takes each queue to its target, the level's best split of the free
room (:mod:`vcsat.solver.shares.level_targets`), keeping its order (the least filled first), and
only then towards equal shares: where the room is short it ends at the split the fill by gain
aims for, without serving the queues that gain most per GPU first (which, with big gangs, leaves
the others' gangs no whole nodes: benchmarks/RESULTS.md, session 24).

- A table of small clusters, where a queue that runs most of the cluster leaves
  the others less room than they deserve: the greedy's first fair-share level equals the proven
  optimum of that level (CP-SAT, a budget far beyond these sizes, no gap allowed) with either
  fill, and the cycle's warm start (no tolerance) ranks at least as high as either fill; without
  the targets, the equal-shares fill misses it on two of them.
- On random clusters: the warm start ranks at least as high as the equal-shares fill, is that
  fill on a tie or within the tolerance, and is the fill by gain when that ranks higher and the
  equal-shares fill is short of the tolerance; the largest-first fill
  (:func:`vcsat.solver.greedy.greedy_largest_first`) and the fill keeping wholly free nodes whole
  (:func:`vcsat.solver.greedy.greedy_keeping_whole`) are kept aside, the higher of the two (the
  largest-first on a tie), exactly where it ranks higher than the decision kept and that is short
  of the tolerance.
- A Hypothesis property over random small clusters: the greedy decision and the cycle's keep every
  rule (the validator accepts both), and the cycle's decision is never worse than the greedy's in
  the objective's first levels (fair-share tiers, then placed work by priority, as one tuple).
"""

from __future__ import annotations

import importlib

import pytest
from hypothesis import HealthCheck, given, settings
from test_gap_bound import ALLOCATE, FREE_GPUS, cluster, running_pods, waiting_jobs
from test_stop_rule import _solved

from vcsat.solver import check
from vcsat.solver import greedy as greedy_module
from vcsat.solver.greedy import Room, greedy, greedy_by_gain, greedy_keeping_whole, greedy_largest_first
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.exact import solve_exact
from vcsat.solver.search.staged import SearchClock

_solve_module = importlib.import_module("vcsat.solver.solve")
_levels = _solve_module._lexicographic
warm_start = _solve_module.warm_start
within_tolerance = importlib.import_module("vcsat.solver.search.stop").within_tolerance

CASES = {
    # q1 runs half the cluster (above its share); q2 (weight 1) and q3 (weight 4) wait with more
    # one-GPU jobs than the free room holds.
    "q1 runs half": ([0, 0, 8, 8], [("q1", 0, 8), ("q1", 1, 8)], [("q2", 0, 1, 1, 12), ("q3", 0, 1, 1, 24)]),
    # The same with three queues waiting and less room.
    "three waiting": (
        [0, 0, 4, 8],
        [("q1", 0, 8), ("q1", 1, 8), ("q1", 2, 4)],
        [("q1", 0, 1, 1, 6), ("q2", 0, 1, 1, 12), ("q3", 0, 1, 1, 24)],
    ),
    # Two priorities: the first level counts each queue's highest priority only.
    "two priorities": (
        [0, 2, 8, 8],
        [("q1", 0, 8), ("q1", 1, 6)],
        [("q2", 1000, 1, 1, 4), ("q2", 0, 1, 1, 8), ("q3", 1000, 1, 1, 8), ("q3", 0, 1, 1, 16)],
    ),
    # q2's one waiting gang is an 8-GPU pod, more than the rest of its share: ranked by the slope
    # where q2 stands it would go first and leave q3's gangs no room; ranked by its whole rise per
    # GPU, q3's gangs go first and raise the level more.
    "a gang past its share": (
        [3, 3, 4],
        [("q2", 0, 8), ("q2", 3, 2), ("q3", 0, 8), ("q2", 0, 8), ("q1", 1, 2), ("q3", 3, 4)],
        [("q2", -100, 1, 8, 1), ("q3", 0, 3, 8, 4), ("q3", 0, 3, 4, 3)],
    ),
    # Likewise with q3's 2-pod gangs of 4 GPUs against q2's one-GPU pods.
    "gangs across pieces": (
        [1, 6],
        [("q2", 2, 8), ("q2", 2, 2), ("q3", 0, 2)],
        [("q1", -100, 2, 2, 1), ("q3", -100, 2, 4, 2), ("q2", 1000, 3, 1, 4)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_greedy_reaches_the_first_fair_share_optimum(name: str) -> None:
    snap = cluster(*CASES[name])
    problem = build_problem(snap, ALLOCATE)
    by_gain = greedy_by_gain(problem)
    assert by_gain is not None
    result = solve_exact(problem, by_gain, budget=20.0, clock=SearchClock(workers=1, wall=False))
    assert result.assignment is not None and result.optimal
    first = min(fair_share_values(problem, by_gain))
    optimum = fair_share_values(problem, result.assignment)[first]
    assert fair_share_values(problem, by_gain)[first] == optimum
    assert fair_share_values(problem, greedy(problem))[first] == optimum
    kept = warm_start(problem, greedy(problem))  # ALLOCATE asks for the full search: no tolerance
    assert _levels(problem, kept.hint) == max(_levels(problem, by_gain), _levels(problem, greedy(problem)))
    # The third fill (largest first) or the one keeping whole nodes is kept aside only where it
    # ranks higher still.
    asides = [a for a in (greedy_largest_first(problem), greedy_keeping_whole(problem)) if a is not None]
    higher = any(_levels(problem, a) > _levels(problem, kept.hint) for a in asides)
    assert (kept.aside is not None) == higher


def _no_targets(
    problem: Problem, room: Room, share: dict[str, tuple[str, int]], held: object, waiting: dict[str, object]
) -> dict[str, int]:
    """Each queue's target at its deserved amount: the fill by equal shares, as it was without targets."""
    return {queue: share[queue][1] for queue in waiting}


@pytest.mark.pure_only
@pytest.mark.parametrize("name", ["q1 runs half", "three waiting"])
def test_equal_shares_without_targets_miss_it(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the targets are for: filled to equal shares, the first level stays below its optimum
    (which both fills reach with them, above)."""
    problem = build_problem(cluster(*CASES[name]), ALLOCATE)
    by_gain = greedy_by_gain(problem)
    assert by_gain is not None
    first = min(fair_share_values(problem, by_gain))
    monkeypatch.setattr(greedy_module, "_targets", _no_targets)
    assert fair_share_values(problem, greedy(problem))[first] < fair_share_values(problem, by_gain)[first]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    free=FREE_GPUS,
    running=running_pods(max_size=6, gpus=[1, 2, 4, 8]),
    waiting=waiting_jobs(5, pods=(1, 2), gpus=(1, 2), count=(1, 8)),
)
def test_never_worse_than_the_greedy_and_the_validator_accepts_both(
    free: list[int],
    running: list[tuple[str, int, int]],
    waiting: list[tuple[str, int, int, int, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snap = cluster(free, running, waiting)
    policy = ALLOCATE.model_copy(update={"relative_gap": 0.005})
    greedy_only, greedy_rank, _ = _solved(snap, policy.model_copy(update={"search": False}), monkeypatch)
    decision, rank, _ = _solved(snap, policy, monkeypatch)
    assert check(snap, greedy_only, policy) == []
    assert check(snap, decision, policy) == []
    assert rank >= greedy_rank
    problem = build_problem(snap, policy)
    equal_shares = greedy(problem)
    by_gain = greedy_by_gain(problem)
    kept = warm_start(problem, equal_shares).hint
    assert _levels(problem, kept) >= _levels(problem, equal_shares)
    first = _solve_module._warm_start(problem, equal_shares)
    short = not within_tolerance(sum(first.values.values()), first.bound, policy.relative_gap)
    if short and by_gain is not None and _levels(problem, by_gain) > _levels(problem, equal_shares):
        assert (kept.placed, kept.shape_slots) == (by_gain.placed, by_gain.shape_slots)
    else:
        assert kept is equal_shares
    # The largest-first fill and the one keeping whole nodes, asked after the other two: the higher
    # of them (the largest-first on a tie) is kept aside where it ranks higher than both.
    aside = warm_start(problem, equal_shares).aside
    candidates = [a for a in (greedy_largest_first(problem), greedy_keeping_whole(problem)) if a is not None]
    best = None
    for candidate in candidates if short else []:
        if _levels(problem, candidate) > _levels(problem, kept if best is None else best):
            best = candidate
    if best is not None:
        assert aside is not None and (aside.placed, aside.shape_slots) == (best.placed, best.shape_slots)
    else:
        assert aside is None
