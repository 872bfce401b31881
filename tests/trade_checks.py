"""What every kept exchange trade must leave, checked the same way by each trade's tests: a rank
no lower than the decision it started from (strictly higher where it changed anything), no node's
room overdrawn, every gang whole or not placed at all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Problem


def assert_a_kept_trade(
    problem: Problem, start: Assignment, result: Assignment, levels: Callable[[Problem, Assignment], Any]
) -> None:
    before = levels(problem, start)
    assert levels(problem, result) >= before
    assert result is start or levels(problem, result) > before  # kept only where strictly higher
    left = problem.room_left(result.shape_slots)
    assert all(amount >= 0 for row in left for amount in row)
    for gang in problem.gangs:
        counts = [result.count.get(c, 0) for c in gang.classes]
        whole = all(k == len(problem.classes[c].pods) for c, k in zip(gang.classes, counts, strict=True))
        assert whole or not any(counts)
        assert (gang.index in result.placed) == any(counts)
