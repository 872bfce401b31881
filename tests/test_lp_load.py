"""The LP bound's model loaded in one call is the model the wrapper's calls build one by one.

:mod:`vcsat.solver.search.bound` writes most of its relaxation as an ``MPModelProto`` and loads it
into GLOP at once; the reference is the same rows set coefficient by coefficient through
pywraplp. Both must give GLOP the same variables, rows and coefficients in the same order (then
the same bounds), on random rows and on the gap-bound clusters.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.linear_solver import linear_solver_pb2, pywraplp
from test_gap_bound import ALLOCATE, CASES, FREE_GPUS, cluster, waiting_jobs

from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.objectives.placement import placed_work
from vcsat.solver.problem import build_problem
from vcsat.solver.search import bound
from vcsat.solver.search.bound import lp_level_bounds


def _exported(lp: pywraplp.Solver) -> tuple[object, ...]:
    proto = linear_solver_pb2.MPModelProto()
    lp.ExportModelToProto(proto)
    variables = [(v.lower_bound, v.upper_bound, v.objective_coefficient, v.is_integer, v.name) for v in proto.variable]
    rows = [
        (c.lower_bound, c.upper_bound, sorted(zip(c.var_index, c.coefficient, strict=True))) for c in proto.constraint
    ]
    return variables, rows


def _both(built: bound._Builder) -> tuple[pywraplp.Solver, pywraplp.Solver]:
    return built.solver(), built.solver(one_by_one=True)


def test_a_row_without_bounds_is_refused() -> None:
    built = bound._Builder()
    x = built.NumVar(0, 1, "x")
    built.row(-math.inf, math.inf, [x], [1.0])
    with pytest.raises(ValueError, match="without bounds"):
        built.solver()


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        # x + y <= 3, x <= 2, y <= 2: max x + 2y = 1 + 4 = 5.
        ([(-math.inf, 3.0, [1.0, 1.0])], 5.0),
        # A zero coefficient is no term: max x + 2y with y <= 2 alone, x <= 2: 6.
        ([(-math.inf, 2.0, [0.0, 1.0])], 6.0),
        # x + y >= 1 and x - y <= 0 (lower and upper rows): max x + 2y = 2 + 4 = 6.
        ([(1.0, math.inf, [1.0, 1.0]), (-math.inf, 0.0, [1.0, -1.0])], 6.0),
    ],
)
def test_table(rows: list[tuple[float, float, list[float]]], expected: float) -> None:
    built = bound._Builder()
    x, y = built.NumVar(0, 2, "x"), built.NumVar(0, 2, "y")
    for lower, upper, coefs in rows:
        built.row(lower, upper, [x, y], coefs)
    fast, reference = _both(built)
    assert _exported(fast) == _exported(reference)
    for lp in (fast, reference):
        objective = lp.Objective()
        objective.SetCoefficient(lp.variables()[0], 1.0)
        objective.SetCoefficient(lp.variables()[1], 2.0)
        objective.SetMaximization()
        assert lp.Solve() == pywraplp.Solver.OPTIMAL
        assert objective.Value() == pytest.approx(expected)


coefficients = st.sampled_from([0.0, 1.0, -1.0, 2.5, -4.0, 1000.0])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bounds=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 9)), min_size=1, max_size=6),
    rows=st.lists(
        st.tuples(
            st.sampled_from(["upper", "lower", "both"]),
            st.integers(-5, 20),
            st.lists(st.tuples(st.integers(0, 5), coefficients), max_size=8),
        ),
        max_size=8,
    ),
    weights=st.lists(st.integers(-3, 5), min_size=6, max_size=6),
)
def test_the_load_is_the_one_by_one_model(
    bounds: list[tuple[int, int]],
    rows: list[tuple[str, int, list[tuple[int, float]]]],
    weights: list[int],
) -> None:
    built = bound._Builder()
    columns = [built.NumVar(low, low + span, f"v{i}") for i, (low, span) in enumerate(bounds)]
    for kind, level, terms in rows:
        lower = -math.inf if kind == "upper" else float(level)
        upper = math.inf if kind == "lower" else float(level + (5 if kind == "both" else 0))
        row = built.Constraint(lower, upper)
        for v, c in terms:  # a variable set twice keeps its last coefficient, as in pywraplp
            row.SetCoefficient(columns[v % len(columns)], c)
    fast, reference = _both(built)
    assert _exported(fast) == _exported(reference)
    answers = []
    for lp in (fast, reference):
        objective = lp.Objective()
        for variable, weight in zip(lp.variables(), weights, strict=False):
            objective.SetCoefficient(variable, float(weight))
        objective.SetMaximization()
        status = lp.Solve()
        answers.append((status, objective.Value() if status == pywraplp.Solver.OPTIMAL else None))
    assert answers[0] == answers[1]


def _bounds_both_ways(snap: object, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[int, int], dict[int, int]]:
    problem = build_problem(snap, ALLOCATE)  # type: ignore[arg-type]
    hint = greedy(problem)
    placed = {rank: placed_work(problem, hint, rank) for rank in {g.rank for g in problem.candidates}}
    fair = fair_share_values(problem, hint)
    fast = lp_level_bounds(problem, placed, fair)
    loaded = bound._Builder.solver
    with monkeypatch.context() as patch:
        patch.setattr(bound._Builder, "solver", lambda self: loaded(self, one_by_one=True))
        reference = lp_level_bounds(problem, placed, fair)
    return fast, reference


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_bounds_are_the_reference_bounds(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, reference = _bounds_both_ways(CASES[name], monkeypatch)
    assert fast == reference
    assert fast


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    free=FREE_GPUS,
    waiting=waiting_jobs(max_size=5),
)
def test_random_clusters_get_the_reference_bounds(
    free: list[int], waiting: list[tuple[str, int, int, int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, reference = _bounds_both_ways(cluster(free, [("q1", 0, 2)], waiting), monkeypatch)
    assert fast == reference
