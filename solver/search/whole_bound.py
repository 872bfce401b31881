"""The LP bound's rows with whole numbers: CP-SAT's proven bound on them, where the LP is loose.

The LP bound (:mod:`vcsat.solver.search.bound`) lets through what no decision can do: part of a
gang that has columns of its own (a launcher and a fraction of its workers), part of a pod of
several GPUs, a fair-share fill point between two whole ones meeting a floor exactly. On a
saturated cluster with weighted queues, where the fair-share floors hold most of the room, that
is where the printed gap comes from: the decision is at the rows' whole-number optimum and the
LP above it.

Every decision is a whole-number solution of the same rows (pods per column, a gang with columns
of its own placed or not, fill points and utilities as the model's and
:func:`vcsat.solver.objectives.fairness.fair_share_values` count them), at the same floors. So the
rows' optimum over whole numbers, and any bound CP-SAT proves on it however early it stops,
bounds each placed-work level as the LP does and never below a decision; the cycle keeps the
smaller of the two.

A CP-SAT solve per level costs far more than the LP, so the cycle asks for it only where the
LP's gap is over the tolerance and its plan has time left (:data:`vcsat.solver.deadline.WHOLE_BOUND`),
with a small deterministic budget per level and one worker: the same bound on every run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vcsat.solver.search.bound import IntegerRows

LEVEL_SECONDS = 0.05
"""CP-SAT's deterministic budget per placed-work level."""
OPEN = 1 << 40
"""Stands for an infinite row bound or variable upper bound: every unbounded variable of the
rows (a fair-share utility) is bounded by its rows far below it."""


def whole_bounds(
    rows: IntegerRows,
    found: dict[int, int],
    fair: dict[int, int],
    loose: list[int],
    *,
    budget: float = LEVEL_SECONDS,
    seconds: float | None = None,
) -> dict[int, int]:
    """Per priority in ``loose`` (placed-work levels whose LP bound is above the decision's
    ``found``): a proven upper bound on its placed work over whole numbers, every higher priority
    keeping at least ``found``'s and each fair-share level at least ``fair``'s, as the LP's bound
    reads them. ``budget``: CP-SAT's deterministic seconds per level; ``seconds``: its wall limit
    per level (None: none). A level CP-SAT proves nothing of is left out."""
    from ortools.sat.python import cp_model

    built = _model(rows, cp_model)
    if built is None:
        return {}
    cp, variables_of = built
    constraints = cp.proto.constraints
    for rank, index in rows.shares.items():
        _set(constraints[index].linear.domain, fair.get(rank, 0), OPEN)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = budget
    if seconds is not None:
        solver.parameters.max_time_in_seconds = max(seconds, 0.0)
    out: dict[int, int] = {}
    for priority in rows.priorities:
        if priority in loose:
            variables, values = rows.objectives[priority]
            cp.maximize(cp_model.LinearExpr.weighted_sum([variables_of[v] for v in variables], values))
            status = solver.solve(cp)
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN):
                # An infeasible or invalid model proves nothing (the decision is a solution of it).
                proven = solver.best_objective_bound
                if math.isfinite(proven):
                    out[priority] = math.floor(proven + 1e-6)
        # The levels below keep at least this one's value, as the LP's bound holds them.
        floor = found.get(priority, 0)
        _set(constraints[rows.floors[priority]].linear.domain, floor if floor > 0 else -OPEN, OPEN)
    return out


def _set(domain: Any, lower: int, upper: int) -> None:
    domain[0] = lower
    domain[1] = upper


def _model(rows: IntegerRows, cp_model: Any) -> tuple[Any, list[Any]] | None:
    """The rows as a CP-SAT model, every variable whole, each floor row open, and its variables in
    the LP's order: None where a coefficient is not a whole number (no such row is built today)."""
    cp = cp_model.CpModel()
    model = rows.model
    variables = [
        cp.new_int_var(
            math.ceil(v.lower_bound), OPEN if math.isinf(v.upper_bound) else math.floor(v.upper_bound), v.name
        )
        for v in model.variable
    ]
    constraints = cp.proto.constraints
    for row in model.constraint:
        coefficients = np.array(row.coefficient, dtype=np.float64)
        whole = np.round(coefficients)
        if not np.array_equal(coefficients, whole):
            return None
        lower = -OPEN if math.isinf(row.lower_bound) else math.ceil(row.lower_bound)
        upper = OPEN if math.isinf(row.upper_bound) else math.floor(row.upper_bound)
        linear = constraints.add().linear
        linear.vars.extend(list(row.var_index))
        linear.coeffs.extend(whole.astype(np.int64).tolist())
        linear.domain.extend([lower, upper])
    for index in rows.floors.values():
        _set(constraints[index].linear.domain, -OPEN, OPEN)
    return cp, variables
