"""The LP bound leaves out the room and block rows that cannot bind (session 49).

A room or block row of :class:`vcsat.solver.search.bound._Relaxation` whose items, every pod of
them placed, still fit (:func:`vcsat.solver.search.bound.binds` false) says nothing the columns'
bounds do not: GLOP's presolve dropped such rows on every solve after reading them in. They are
left out when the LP is built now. The reference below keeps every row: each bound, and each
GLOP solve's objective to the last bit, must be the same, on shape files in miniature.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ortools.linear_solver import pywraplp
from shape_files import shape_problem

from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.objectives.placement import placed_work
from vcsat.solver.problem import Problem
from vcsat.solver.search import bound


@pytest.mark.parametrize(
    ("coefs", "most", "upper", "expected"),
    [
        ([1.0, 2.0], [3.0, 1.0], 5.0, False),  # all placed take 5: exactly the room, never more
        ([1.0, 2.0], [3.0, 1.0], 4.0, True),  # all placed would take 5 of 4
        ([4.0], [2.0], 7.0, True),
        ([4.0], [2.0], 8.0, False),
        ([], [], 0.0, False),
        ([65536.0, 65536.0], [1000.0, 3000.0], 262_144_000.0, False),  # large whole numbers, summed exactly
        ([65536.0, 65536.0], [1000.0, 3000.0], 262_143_999.0, True),
    ],
)
def test_table(coefs: list[float], most: list[float], upper: float, expected: bool) -> None:
    assert bound.binds(np.array(coefs, dtype=np.float64), np.array(most, dtype=np.float64), upper) is expected


def _run(problem: Problem, monkeypatch: pytest.MonkeyPatch, *, every_row: bool) -> tuple[list[Any], list[Any], int]:
    """Every bound a cycle reads (placed work for the greedy's decision, again for an empty one,
    the fair-share levels), each GLOP solve's status and objective, and the rows loaded."""
    solves: list[tuple[int, str]] = []
    rows: list[int] = []
    solve = pywraplp.Solver.Solve
    loaded = bound._Builder.solver

    def recording(self: Any, *args: Any) -> int:
        status = int(solve(self, *args))
        solves.append((status, float(self.Objective().Value()).hex()))
        return status

    def counting(self: Any, **kwargs: Any) -> pywraplp.Solver:
        rows.append(len(self.rows))
        return loaded(self, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(pywraplp.Solver, "Solve", recording)
        patch.setattr(bound._Builder, "solver", counting)
        if every_row:
            patch.setattr(bound, "binds", lambda coefs, most, upper: True)
        decision = greedy(problem)
        ranks = {gang.rank for gang in problem.candidates}
        first = bound.lp_bounds(
            problem, {r: placed_work(problem, decision, r) for r in ranks}, fair_share_values(problem, decision)
        )
        empty = type(decision)()
        second = first.again({r: placed_work(problem, empty, r) for r in ranks}, fair_share_values(problem, empty))
        return [first.placed, second.placed, second.fair_bounds()], solves, sum(rows)


@pytest.mark.pure_only  # swaps a function of search/bound.py, which compiled callers do not see
@pytest.mark.parametrize(
    ("shape", "nodes", "seed"),
    [("contended", 60, 1), ("capped", 50, 2), ("big-gangs", 40, 3), ("weighted", 50, 4), ("default", 80, 5)],
)
def test_the_bounds_and_every_solve_are_those_of_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, nodes: int, seed: int
) -> None:
    problem = shape_problem(tmp_path, shape, nodes, seed)
    bounds, solves, rows = _run(problem, monkeypatch, every_row=False)
    reference, reference_solves, every = _run(problem, monkeypatch, every_row=True)
    assert bounds == reference
    assert solves == reference_solves
    assert len(solves) >= 2
    assert rows < every  # each of these files has rows with room to spare
