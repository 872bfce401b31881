"""A gang of one pod without topology goes straight to its one trial anywhere in
:func:`vcsat.solver.greedy.fit_topology_first`, without the generator of topology attempts
(:func:`vcsat.solver.greedy._domain_attempts`, which yields that one trial for it): the greedy's
decisions are those of the trials made one by one from the attempts (the code before)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fill_memos import decided, problem_of

from vcsat.solver import greedy
from vcsat.solver.greedy import Room, Taken
from vcsat.solver.problem import Gang, Problem


def every_attempt(problem: Problem, gang: Gang, room: Room, caps: list[dict[str, int]]) -> Taken | None:
    """:func:`greedy.fit_topology_first` as it was: each attempt's trial in turn."""
    for nodes in greedy._domain_attempts(problem, gang, room):
        taken = greedy.fit_gang(problem, gang, room, caps, nodes)
        if taken is not None:
            return taken
    return None


def both_fills(problem: Problem) -> Any:
    greedy._last_memos = None
    return decided(greedy.greedy(problem)), decided(greedy.greedy_by_gain(problem))


def test_a_one_pod_gang_takes_the_trial_its_attempts_make() -> None:
    problem = problem_of(3, 0.7)
    one_pod = [g for g in problem.candidates if len(g.classes) == 1 and len(problem.classes[g.classes[0]].pods) == 1]
    assert one_pod  # the generated cluster has some
    for gang in one_pod:
        caps = [dict(problem.queue_room[q]) for q in problem.caps_of(gang.queue)]
        assert greedy.fit_topology_first(problem, gang, Room(problem), caps) == every_attempt(
            problem, gang, Room(problem), caps
        )


@pytest.mark.pure_only
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 60), busy=st.sampled_from([0.3, 0.7, 0.95]))
def test_fills_decide_as_with_every_attempt(seed: int, busy: float) -> None:
    problem = problem_of(seed, busy)
    now = both_fills(problem)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(greedy, "fit_topology_first", every_attempt)
        before = both_fills(problem)
    assert now == before
