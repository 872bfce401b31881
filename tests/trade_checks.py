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


def placed_on(problem: Problem, where: dict[str, str]) -> Assignment:
    """A decision made by hand for a trade to start from: every pod of each gang (by key) on the
    node named."""
    node_of = {n.name: i for i, n in enumerate(problem.nodes)}
    by_key = {gang.key: gang for gang in problem.gangs}
    out = Assignment()
    for key, name in where.items():
        gang = by_key[key]
        out.placed.add(gang.index)
        for c in gang.classes:
            k = len(problem.classes[c].pods)
            s, n = problem.classes[c].shape, node_of[name]
            out.count[c] = k
            out.shape_slots[(s, n)] = out.shape_slots.get((s, n), 0) + k
            out.gang_slots[(gang.index, s, n)] = out.gang_slots.get((gang.index, s, n), 0) + k
    return out
