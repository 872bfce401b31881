"""What the greedy's second fill costs against the first greedy's, in CPU seconds, per instance file.

The wall plan (``vcsat.solver.deadline``) predicts the second fill (``greedy_by_gain``, asked in
``vcsat.solver.solve.warm_start``) from the first greedy's own CPU time, which the cycle measures
just before; this measures both as the cycle runs them: the snapshot read, the problem built, the
first greedy, then the warm start with its second fill (wrapped for the time of the call; no
change to the solver). Where the first fill is already within the tolerance the cycle does not
ask for the second; it is timed anyway, after the warm start, and marked ``asked: false``.

    python benchmarks/fill_ratio.py FILE... --json   # one JSON line per file, one process per file

Run one process per file (a shell loop): caches warmed by another file are not the cycle's.
The box the benchmarks run on is shared: measure under its lock and say its load.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click


def measure(path: Path) -> dict[str, Any]:
    """The first greedy's and the second fill's CPU seconds on ``path``, and their ratio."""
    import importlib

    from vcsat.adapters.convert import instance_file
    from vcsat.model import Policy
    from vcsat.solver.pauses import no_gc_pauses

    solve_module = importlib.import_module("vcsat.solver.solve")
    snapshot = instance_file.read_snapshot(path)
    fills: list[float] = []
    original = solve_module.greedy_by_gain

    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            fills.append(time.process_time() - began)

    solve_module.greedy_by_gain = timed
    # As the cycle runs them: the problem built, the greedy and the warm start with the collector
    # paused (``vcsat.solver.solve.solve``).
    try:
        with no_gc_pauses():
            problem = solve_module.build_problem(snapshot, Policy(time_limit_s=1.0))
            started = time.process_time()
            first = solve_module.greedy(problem)
            greedy_cpu = time.process_time() - started
            solve_module.warm_start(problem, first, None)
            asked = bool(fills)
            if not asked:
                timed(problem)
    finally:
        solve_module.greedy_by_gain = original
    return {
        "instance": str(path),
        "nodes": len(problem.nodes),
        "greedy_cpu": round(greedy_cpu, 4),
        "fill_cpu": round(fills[0], 4),
        "ratio": round(fills[0] / greedy_cpu, 3) if greedy_cpu else None,
        "asked": asked,
    }


@click.command()
@click.argument("instances", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True)
def main(instances: tuple[Path, ...], as_json: bool) -> None:
    for path in instances:
        report = measure(path)
        if as_json:
            click.echo(json.dumps(report))
        else:
            click.echo(
                f"{path.name:<28} greedy {report['greedy_cpu']:.3f}  fill {report['fill_cpu']:.3f}"
                f"  ratio {report['ratio']}  asked {report['asked']}"
            )


if __name__ == "__main__":
    main()
