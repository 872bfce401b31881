"""How much of a decision's gap a tighter bound of the LP's kind could take away, level by level.

The reported gap is placed work against the LP bound (:mod:`vcsat.solver.search.bound`), each
placed-work level bounded with the levels above it held at the decision's values. A gap over the
tolerance is either the decision's (a better decision exists at those values) or the bound's (the
LP reaches past every decision). This script measures the part that inequalities valid for whole
pods could remove from the LP: per level, the same LP's rows solved as an integer program (whole
pods per column, whole gang fractions for the gangs with columns of their own, whole fill points
and utilities in the fair-share rows; SCIP, at most ``--seconds`` a level, its proven bound when
stopped). Any cut added to the LP's rows that no whole-pod solution of them violates (integer
rounding of a fair-share row, a cover of a gang's minimum) leaves the bound at or above the
integer program's; what is left between it and the decision is node-level packing the rows do
not see, or work the decision could still place.

    PYTHONPATH=TREE python benchmarks/bound_slack.py FILES... [--trades 8] [--seconds 20]

Each file's decision is the one a 1 s cycle makes after ``--trades`` exchange trades with the
search skipped, on budgets alone (``wall=False``: ``fixed_trades.py``'s), so the numbers do not
depend on the machine's load. One JSON line per file: the decision's gap, and per placed-work
level (highest priority first) its value, the LP bound and the integer program's bound, with the
gap each bound gives.
"""

from __future__ import annotations

import gc
import json
import math
import time
from pathlib import Path
from typing import Any

import click
from ortools.linear_solver import linear_solver_pb2, pywraplp

from vcsat.model import Decision, Policy, Snapshot, relative_gap
from vcsat.solver.objectives.fairness import fair_ranks
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search import bound

WHOLE = ("y", "z", "fill", "fair")
"""Prefixes of the LP's variables that are whole numbers in every decision: pods per column
(``y``), a gang with columns of its own placed or not (``z``), and the fair-share rows' fill
points and utilities (integers in the exact model)."""


def decision_values(problem: Problem, decision: Decision) -> tuple[dict[int, int], dict[int, int]]:
    """The decision's placed work per priority and fair share per level, as its ``solver.levels``
    list them: the fair-share levels first (most important first), then placed work by priority,
    highest first."""
    levels = decision.solver.levels
    ranks = fair_ranks(problem)
    fair = {rank: levels[i].value for i, rank in enumerate(ranks)}
    priorities = sorted({gang.rank for gang in problem.candidates}, reverse=True)
    placed = {priority: levels[len(ranks) + i].value for i, priority in enumerate(priorities)}
    return placed, fair


def integer_bound(lp: pywraplp.Solver, seconds: float) -> tuple[int, bool] | None:
    """The LP as it stands (objective and floors set), its whole-number variables made integer,
    solved by SCIP: (its proven bound, rounded down as the LP's is, whether proven optimal); None
    where SCIP is not built in or finds no solution."""
    proto = linear_solver_pb2.MPModelProto()
    lp.ExportModelToProto(proto)
    for variable in proto.variable:
        if variable.name.startswith(WHOLE):
            variable.is_integer = True
    mip = pywraplp.Solver.CreateSolver("SCIP")
    if mip is None:
        return None
    mip.LoadModelFromProto(proto)
    mip.SetTimeLimit(int(seconds * 1000))
    status = mip.Solve()
    if status not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        return None
    best = mip.Objective().BestBound()
    return math.floor(best + bound.TOLERANCE * (1.0 + abs(best))), status == pywraplp.Solver.OPTIMAL


def slack(problem: Problem, placed: dict[int, int], fair: dict[int, int], seconds: float) -> list[dict[str, Any]]:
    """Per placed-work level (highest priority first): its value, the LP bound and the integer
    program's, the levels above held at ``placed`` and ``fair``."""
    items = bound._items(problem)
    if not items:
        return []
    priorities = sorted({item.priority for item in items}, reverse=True)
    relaxation = bound._Relaxation(problem, items, priorities, fair)
    out = []
    for number, priority in enumerate(priorities):
        relaxation.release()
        for higher in priorities[:number]:
            relaxation.hold(higher, placed.get(higher, 0))
        lp = relaxation.maximise(priority)
        whole = integer_bound(relaxation.lp, seconds)
        value = placed.get(priority, 0)
        out.append(
            {
                "priority": priority,
                "value": value,
                "lp": lp,
                "integer": None if whole is None else whole[0],
                "proven": None if whole is None else whole[1],
            }
        )
    return out


def measure(snapshot: Snapshot, trades: int, seconds: float) -> dict[str, Any]:
    from vcsat.solver import solve

    policy = Policy(time_limit_s=1.0)
    decision = solve(snapshot, policy, wall=False, skip=frozenset({"search", f"exchange_trades={trades}"}))
    problem = build_problem(snapshot, policy)
    placed, fair = decision_values(problem, decision)
    started = time.process_time()
    levels = slack(problem, placed, fair, seconds)
    objective = sum(placed.values())
    # Each level's bound as the cycle reports it: never below the decision's own value.
    lp = sum(max(level["value"], level["lp"]) for level in levels)
    whole = [level["integer"] for level in levels]
    integer = sum(max(level["value"], min(level["lp"], level["integer"] or 0)) for level in levels)
    return {
        "trades": trades,
        "status": decision.solver.status,
        "gap": decision.solver.gap,
        "fair": [fair[rank] for rank in sorted(fair)],
        "levels": levels,
        "gap_lp": relative_gap(objective, lp),
        "gap_integer": None if None in whole else relative_gap(objective, integer),
        "cpu_s": round(time.process_time() - started, 2),
    }


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--trades", default=8, show_default=True, help="Exchange trades the decision makes.")
@click.option("--seconds", default=20.0, show_default=True, help="SCIP's limit per level.")
def main(files: tuple[Path, ...], trades: int, seconds: float) -> None:
    from vcsat.adapters.convert import instance_file

    for path in files:
        out = measure(instance_file.read_snapshot(path), trades, seconds)
        click.echo(json.dumps({"file": f"{path.parent.name}/{path.name}", **out}))
        gc.collect()  # a long run over many files: each file's cyclic garbage collected between them


if __name__ == "__main__":
    main()
