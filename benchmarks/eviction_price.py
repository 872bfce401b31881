"""What the eviction phase costs against what the wall plan predicts it costs, run by run.

Replays one cycle per file as ``fixed_trades.py`` does (``wall=False``: nothing skips the eviction
phase, which then runs whatever a clock would have said) and times the phase and each of its
runs in CPU seconds, beside the wall plan's price of the phase (``WallPlan.evictions_cost`` with
the inputs the cycle gave it) and each run's size: the preemptors it was given and those that
could run, the victims given and those on nodes a preemptor may use, the candidate cells, and the
CP-SAT model's variables and constraints. One JSON line per file.

    PYTHONPATH=TREE python benchmarks/eviction_price.py FILES... --trades 0 > rows.jsonl

CPU seconds count every thread (CP-SAT's worker included), as the wall plan's prices do. The box
is shared: run it under the measurement lock and say the load beside the numbers.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click


def price_and_cost(
    path: Path, trades: int, skip: list[str], time_limit: float | None = None, replay_limit: float = 1.0
) -> dict[str, Any]:
    import importlib

    from vcsat.adapters.convert import instance_file
    from vcsat.model import Policy

    solve_module = importlib.import_module("vcsat.solver.solve")
    preempt = importlib.import_module("vcsat.solver.preemption.preempt")
    deadline = importlib.import_module("vcsat.solver.deadline")
    from vcsat.solver.search import cp_sat

    cp_sat.load()  # the import is set aside from a cycle's deadline: not the phase's cost here
    snapshot = instance_file.read_snapshot(path)
    prices: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    phase: dict[str, float] = {}
    models: list[Any] = []
    could: list[int] = []

    def cpu_of(name: str, function: Callable[..., Any], into: dict[str, float]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                into[name] = into.get(name, 0.0) + time.process_time() - started

        return wrapper

    original_cost = deadline.WallPlan.evictions_cost
    original_allows = deadline.WallPlan.allows
    asked: list[dict[str, Any]] = []

    def allows(self: Any, step: str, cpu_cost: float, **kwargs: Any) -> bool:
        left = self.left(kwargs.get("last", False))
        answer = bool(original_allows(self, step, cpu_cost, **kwargs))
        if step.startswith("evict"):
            asked.append(
                {
                    "step": step,
                    "cost": round(cpu_cost, 3),
                    "slowdown": round(self.slowdown(), 2),
                    "left": None if left is None else round(left, 3),
                    "allowed": answer,
                }
            )
        return answer

    def cost(self: Any, *args: Any, **kwargs: Any) -> float:
        value = float(original_cost(self, *args, **kwargs))
        prices.append({"args": [repr(a) if not isinstance(a, (int, float)) else a for a in args], "price": value})
        return value

    def new_model() -> Any:
        cp = original_new()
        models.append(cp)
        return cp

    def could_run(*args: Any, **kwargs: Any) -> Any:
        found = original_could(*args, **kwargs)
        could.append(len(found))
        return found

    def run(problem: Any, preemptors: list[Any], victims: list[Any], *args: Any, **kwargs: Any) -> Any:
        before_models, before_could, solve_before = len(models), len(could), phase.get("cp_sat", 0.0)
        before_solves = len(solves)
        started = time.process_time()
        try:
            return original_run(problem, preemptors, victims, *args, **kwargs)
        finally:
            row: dict[str, Any] = {
                "reason": args[2] if len(args) > 2 else kwargs.get("reason"),
                "preemptors": len(preemptors),
                "preemptor_pods": sum(len(problem.classes[c].pods) for g in preemptors for c in g.classes),
                "victims": len(victims),
                "could_run": could[before_could] if len(could) > before_could else None,
                "cpu": round(time.process_time() - started, 4),
                "cp_sat_cpu": round(phase.get("cp_sat", 0.0) - solve_before, 4),
                "solves": solves[before_solves:],
            }
            if len(models) > before_models:
                proto = models[before_models].proto
                row["variables"] = len(proto.variables)
                row["constraints"] = len(proto.constraints)
            runs.append(row)

    from ortools.sat.python import cp_model

    solves: list[dict[str, Any]] = []
    original_solve = cp_model.CpSolver.solve

    def solve(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        status = original_solve(self, *args, **kwargs)
        solves.append(
            {
                "limit": round(self.parameters.max_deterministic_time, 4),
                "det": round(self.response_proto.deterministic_time, 4),
                "cpu": round(time.process_time() - started, 4),
                "status": self.status_name(status),
            }
        )
        return status

    original_new, original_could, original_run = preempt.new_cp_model, preempt._could_run, preempt._run
    original_stages, original_victims = preempt.solve_stages, preempt.victims_of
    original_preempt = solve_module._preempt
    deadline.WallPlan.evictions_cost = cost  # type: ignore[method-assign]
    cp_model.CpSolver.solve = solve  # type: ignore[method-assign]
    deadline.WallPlan.allows = allows  # type: ignore[method-assign]
    preempt.new_cp_model = new_model
    preempt._could_run = could_run
    preempt._run = run
    preempt.solve_stages = cpu_of("cp_sat", original_stages, phase)
    preempt.victims_of = cpu_of("victims", original_victims, phase)
    solve_module._preempt = cpu_of("phase", original_preempt, phase)
    try:
        gc.collect()
        started = time.monotonic()
        if time_limit is None:
            decision = solve_module.solve(
                snapshot,
                Policy(time_limit_s=replay_limit),
                wall=False,
                skip=frozenset({*skip, f"exchange_trades={trades}"}),
            )
        else:  # a live cycle: the limit counted from after the read, as the scheduler counts it
            decision = solve_module.solve(snapshot, Policy(time_limit_s=time_limit), started=started)
        wall = time.monotonic() - started
    finally:
        deadline.WallPlan.evictions_cost = original_cost  # type: ignore[method-assign]
        cp_model.CpSolver.solve = original_solve  # type: ignore[method-assign]
        deadline.WallPlan.allows = original_allows  # type: ignore[method-assign]
        preempt.new_cp_model, preempt._could_run, preempt._run = original_new, original_could, original_run
        preempt.solve_stages, preempt.victims_of = original_stages, original_victims
        solve_module._preempt = original_preempt
    from vcsat.solver import check

    violations = check(snapshot, decision, Policy(time_limit_s=1.0))
    return {
        "file": path.name,
        "nodes": len(snapshot.nodes),
        "trades": trades,
        "time_limit": time_limit,
        "wall": round(wall, 3),
        "asked": asked,
        "skipped": decision.solver.skipped,
        "prices": prices,
        "phase_cpu": round(phase.get("phase", 0.0), 4),
        "victims_cpu": round(phase.get("victims", 0.0), 4),
        "cp_sat_cpu": round(phase.get("cp_sat", 0.0), 4),
        "runs": runs,
        "evictions": len(decision.evictions),
        "nominations": len(decision.nominations),
        "status": decision.solver.status,
        "gap": decision.solver.gap,
        "levels": [[level.level, level.value] for level in decision.solver.levels],
        "violations": len(violations),
    }


@click.command()
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--trades", type=int, default=0, show_default=True, help="Exchange trades the replay runs.")
@click.option(
    "--skip", multiple=True, default=("search", "whole_bound"), show_default=True, help="Steps the replay skips."
)
@click.option(
    "--time-limit",
    type=float,
    default=None,
    help="Run a live cycle instead of a replay: this limit, counted from after the read, with the wall stop on.",
)
@click.option(
    "--replay-limit",
    type=float,
    default=1.0,
    show_default=True,
    help="The replay's time limit (its budgets: the eviction phase's is a share of it).",
)
@click.option("--repeat", type=int, default=1, show_default=True, help="Cycles per file, one after the other.")
@click.option("--label", default="", help="A label for every row (the tree measured).")
@click.option(
    "--cpu-clock",
    is_flag=True,
    help="Count the time limit in this process's CPU seconds: on a machine busy with other work the "
    "cycle's deadline then acts as on an idle one (CP-SAT's own wall limits excepted).",
)
def main(
    files: tuple[Path, ...],
    trades: int,
    skip: tuple[str, ...],
    time_limit: float | None,
    replay_limit: float,
    repeat: int,
    label: str,
    cpu_clock: bool,
) -> None:
    if cpu_clock:
        # Before the solver is imported: its clocks (and their defaults) read time.monotonic.
        time.monotonic = time.process_time
    for path in files:
        for _ in range(repeat):
            row = price_and_cost(path, trades, list(skip), time_limit, replay_limit)
            row = {"label": label, "path": f"{path.parent.name}/{path.name}", "cpu_clock": cpu_clock, **row}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
