"""The LP bound sets only the objective coefficients that change, loads its floors and rows at once (session 31).

:meth:`vcsat.solver.search.bound._Relaxation.maximise` used to set every item's objective
coefficient for each priority (the priority's items to their values, every other item to 0); it
now sets the last maximised priority's items back to 0 and this one's to their values, since
setting 0 where the objective holds nothing is a no-op of the solver's. The priorities' floors
were rows made through the solver's wrapper, a call per coefficient, after the other rows were
loaded; they are loaded with them now (with a lower bound the loader keeps, loosened after). And
``_Builder.solver`` hands a row without a zero coefficient to the model as its dict holds it.
The references below are the loops as they were: after every solve the whole LP (exported as a
model, byte for byte) and every bound are the same, on shape files in miniature and on generated
clusters (Hypothesis).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.linear_solver import linear_solver_pb2, pywraplp
from shape_files import ALLOCATE, shape_problem
from test_greedy_index import generated
from test_known_not_to_fit import SLOW_OK

from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.fairness import fair_share_values, fair_terms, utility_pieces
from vcsat.solver.objectives.placement import placed_work
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search import bound


def _model(lp: pywraplp.Solver) -> bytes:
    """The whole LP (variables with their objective coefficients, rows, bounds), byte for byte."""
    model = linear_solver_pb2.MPModelProto()
    lp.ExportModelToProto(model)
    return bytes(model.SerializeToString(deterministic=True))


def _maximise_every(self: Any, priority: int) -> int:
    """``_Relaxation.maximise`` as it was: every item's coefficient set for each priority."""
    objective = self.lp.Objective()
    for i, item in enumerate(self.items):
        objective.SetCoefficient(self.y[i], float(item.value) if item.priority == priority else 0.0)
    objective.SetMaximization()
    everything = sum(item.value * item.pods for item in self.items if item.priority == priority)
    if self.lp.Solve() != pywraplp.Solver.OPTIMAL:
        return everything
    value = float(objective.Value())
    return min(everything, math.floor(value + bound.TOLERANCE * (1.0 + abs(value))))


def _solver_every(self: Any, *, one_by_one: bool = False, floors: int = 0, fair: int = 0) -> pywraplp.Solver:
    """``_Builder.solver`` as it was: every row's terms read back one by one, zeros left out.
    ``floors``: how many rows (each with a lower bound of 0), before the last ``fair``, are the
    relaxation's priorities' floors, which were made through the wrapper after the load, without
    bounds (loosened after the load now); ``fair``: how many last rows are the fair-share rows,
    which were made through the wrapper after the floors (loaded with the others now)."""
    assert not one_by_one
    rows = self.rows
    made: list[Any] = []
    shares: list[Any] = []
    if floors or fair:
        loaded = len(rows) - floors - fair
        rows, made, shares = rows[:loaded], rows[loaded : loaded + floors], rows[loaded + floors :]
        assert all(row.lower == 0.0 for row in made)
    lp = pywraplp.Solver.CreateSolver("GLOP")
    for row in rows:
        constraint = self.model.constraint.add()
        constraint.lower_bound = row.lower
        constraint.upper_bound = row.upper
        terms = [(v, c) for v, c in row.items() if c != 0.0]
        constraint.var_index.extend([v for v, _ in terms])
        constraint.coefficient.extend([c for _, c in terms])
    assert not lp.LoadModelFromProtoKeepNames(self.model)
    variables = lp.variables()
    for row in made:
        assert row.upper == math.inf
        floor = lp.Constraint(-math.inf, math.inf)
        for v, c in row.items():
            floor.SetCoefficient(variables[v], c)
    for row in shares:
        share = lp.Constraint(row.lower, row.upper)
        for v, c in row.items():
            share.SetCoefficient(variables[v], c)
    return lp


def _run(problem: Problem, monkeypatch: pytest.MonkeyPatch, *, reference: bool) -> tuple[list[Any], list[bytes]]:
    """Every bound a cycle reads (placed work for the greedy's decision, again for an empty one,
    the fair-share levels), and the LP as a model after each solve."""
    models: list[bytes] = []
    with monkeypatch.context() as patch:
        maximise = _maximise_every if reference else bound._Relaxation.maximise
        if reference:
            priorities = len({item.priority for item in bound._items(problem)})
            ranks = fair_share_values(problem, greedy(problem))
            pieces = len(utility_pieces())
            fair = sum(len(fair_terms(problem, rank)) * (1 + pieces) + 1 for rank in ranks)
            patch.setattr(bound._Builder, "solver", lambda self: _solver_every(self, floors=priorities, fair=fair))

        def recording(self: Any, priority: int) -> int:
            value = maximise(self, priority)
            models.append(_model(self.lp))
            return value

        patch.setattr(bound._Relaxation, "maximise", recording)
        decision = greedy(problem)
        ranks = {gang.rank for gang in problem.candidates}
        first = bound.lp_bounds(
            problem, {r: placed_work(problem, decision, r) for r in ranks}, fair_share_values(problem, decision)
        )
        empty = type(decision)()
        second = first.again({r: placed_work(problem, empty, r) for r in ranks}, fair_share_values(problem, empty))
        return [first.placed, second.placed, second.fair_bounds()], models


def _same(problem: Problem, monkeypatch: pytest.MonkeyPatch) -> int:
    now, models = _run(problem, monkeypatch, reference=False)
    then, reference_models = _run(problem, monkeypatch, reference=True)
    assert now == then
    assert models == reference_models
    return len(models)


@pytest.mark.pure_only  # swaps a method of search/bound.py's classes, which compiled callers do not see
@pytest.mark.parametrize(
    ("shape", "nodes", "seed"),
    [("contended", 60, 1), ("capped", 50, 2), ("big-gangs", 40, 3), ("weighted", 50, 4), ("default", 40, 5)],
)
def test_bounds_and_lp_as_with_every_coefficient_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, nodes: int, seed: int
) -> None:
    problem = shape_problem(tmp_path, shape, nodes, seed)
    assert _same(problem, monkeypatch) >= 2  # at least two solves: the objective was changed between them


@pytest.mark.pure_only  # swaps a method of search/bound.py's classes, which compiled callers do not see
@settings(max_examples=20, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(2, 40),
    jobs=st.integers(5, 150),
    seed=st.integers(0, 10_000),
    busy=st.sampled_from([0.2, 0.6, 0.9]),
    multi=st.sampled_from([0.1, 0.4]),
)
def test_bounds_and_lp_as_with_every_coefficient_set_on_generated_clusters(
    monkeypatch: pytest.MonkeyPatch, nodes: int, jobs: int, seed: int, busy: float, multi: float
) -> None:
    snap = generated(nodes=nodes, pending_jobs=jobs, seed=seed, busy_gpu_fraction=busy, multi_node_job_share=multi)
    _same(build_problem(snap, ALLOCATE), monkeypatch)


@pytest.mark.parametrize(
    "coefficients",
    [[1.0, 2.0], [0.0, 3.0], [-0.0, 1.5], [2.0, 0.0], [0.0, 0.0]],
)
def test_rows_loaded_as_the_loop_loaded_them(coefficients: list[float]) -> None:
    """A row with a zero coefficient loses that term, one without keeps its terms in order."""
    models = []
    for solver in (bound._Builder.solver, _solver_every):
        built = bound._Builder()
        x, y = built.NumVar(0, 1, "x"), built.NumVar(0, 2, "y")
        built.row(-math.inf, 4.0, [y, x], coefficients)
        built.row(1.0, math.inf, [x], [1.0])
        loaded = _model(solver(built))
        models.append((bytes(built.model.SerializeToString(deterministic=True)), loaded))
    assert models[0] == models[1]
