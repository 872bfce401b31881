"""The exchange's top-ups order their waiting gangs by each candidate's kept place in packing order.

:meth:`vcsat.solver.greedy.KeptRankings.in_packing_order` sorts a set of gangs by their places in
the candidates' packing order (made once per problem) instead of a packing key made per gang each
time; :func:`vcsat.solver.greedy.fill` sorted them by :func:`vcsat.solver.greedy._packing_order`.
The cases and the property hold the two orders equal, whether the places come from the greedy's
sorted candidates or are sorted afresh, and check that a gang that is not a candidate hands the
sort back (None).
"""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_greedy_gang_path import _generated

from vcsat.model import Policy
from vcsat.solver import greedy
from vcsat.solver.problem import Problem, build_problem

POLICY = Policy(time_limit_s=2)


def reference(problem: Problem, gangs: set[int]) -> list[int]:
    """What :func:`vcsat.solver.greedy.fill` made of them: sorted by their packing keys."""
    ordered = sorted((problem.gangs[g] for g in gangs), key=partial(greedy._packing_order, problem))
    return [gang.index for gang in ordered]


def _problem(seed: int, nodes: int = 12, jobs: int = 40) -> Problem:
    return build_problem(_generated(seed, nodes, jobs, 0.3, [None, None, None]), POLICY)


@pytest.mark.parametrize("from_greedy", [False, True], ids=["sorted-here", "greedy-order"])
def test_every_candidate_and_none_alike(from_greedy: bool) -> None:
    problem = _problem(7)
    if from_greedy:
        greedy.greedy(problem)  # its memos now hold the candidates in packing order
    else:
        greedy._last_memos = None
    kept = greedy.KeptRankings(problem)
    every = {gang.index for gang in problem.candidates}
    assert len(every) > 5
    ordered = kept.in_packing_order(every)
    assert ordered is not None
    assert [gang.index for gang in ordered] == reference(problem, every)
    assert kept.in_packing_order(set()) == []


def test_a_gang_not_a_candidate_hands_the_sort_back() -> None:
    problem = _problem(11)
    others = [gang.index for gang in problem.gangs if gang.index not in {c.index for c in problem.candidates}]
    kept = greedy.KeptRankings(problem)
    some = {problem.candidates[0].index}
    assert kept.in_packing_order(some) is not None
    if others:
        assert kept.in_packing_order(some | {others[0]}) is None
    assert kept.in_packing_order({len(problem.gangs) + 5}) is None  # no such gang


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), jobs=st.integers(10, 70), data=st.data(), from_greedy=st.booleans())
def test_any_set_of_candidates_sorts_as_the_packing_keys(
    seed: int, jobs: int, data: st.DataObject, from_greedy: bool
) -> None:
    problem = _problem(seed, jobs=jobs)
    if from_greedy:
        greedy.greedy(problem)
    else:
        greedy._last_memos = None
    kept = greedy.KeptRankings(problem)
    candidates = sorted(gang.index for gang in problem.candidates)
    for _ in range(3):
        gangs = set(data.draw(st.lists(st.sampled_from(candidates), unique=True) if candidates else st.just([])))
        ordered = kept.in_packing_order(gangs)
        assert ordered is not None
        assert [gang.index for gang in ordered] == reference(problem, gangs)
