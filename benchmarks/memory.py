"""Peak memory of one scheduling cycle, measured in a fresh process.

pytest-benchmark's process also holds pytest, the generator and earlier rounds, so its peak RSS
overstates the cycle. This script generates (or reuses) the instance in the parent, then runs one
cycle (read file -> snapshot -> solve -> check) in a child process and reports the child's peak
resident memory after each stage (``VmHWM``, else ``resource.getrusage``).

    python benchmarks/memory.py                      # 1,000 nodes, 2,000 pending jobs
    python benchmarks/memory.py --nodes 5000 --pending-jobs 10000 --json
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click


def _peak_mib() -> float:
    """Peak resident memory of this process (MiB).

    Linux's ``VmHWM`` first: ``getrusage``'s ``ru_maxrss`` carries over the parent's size at fork
    (across exec), and the parent here has just generated a large instance."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run_cycle(path: Path, time_limit_s: float) -> dict[str, Any]:
    """One cycle in this process; peak RSS (MiB) after each stage."""
    from vcsat.adapters.convert.instance_file import read_snapshot
    from vcsat.model import Policy
    from vcsat.solver import check, solve

    report: dict[str, Any] = {"instance": str(path), "instance_bytes": path.stat().st_size}
    report["rss_after_imports_mib"] = _peak_mib()
    started = time.perf_counter()
    snapshot = read_snapshot(path)
    report["read_seconds"] = round(time.perf_counter() - started, 3)
    report["rss_after_snapshot_mib"] = _peak_mib()
    policy = Policy(time_limit_s=time_limit_s)
    started = time.perf_counter()
    decision = solve(snapshot, policy)
    report["solve_seconds"] = round(time.perf_counter() - started, 3)
    report["rss_after_solve_mib"] = _peak_mib()
    violations = check(snapshot, decision, policy)
    report["rss_peak_mib"] = _peak_mib()
    report.update(
        status=decision.solver.status,
        objective=decision.solver.objective,
        bound=decision.solver.bound,
        pods_bound=len(decision.bindings),
        violations=len(violations),
    )
    return report


@click.command()
@click.option("--nodes", type=click.IntRange(min=1), default=1000, show_default=True)
@click.option("--pending-jobs", type=click.IntRange(min=0), default=2000, show_default=True)
@click.option("--busy", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--time-limit", type=float, default=10.0, show_default=True, help="Solver time limit (s).")
@click.option(
    "--instance",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Measure this instance file instead of a generated one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--child", type=click.Path(path_type=Path), hidden=True)
def main(
    nodes: int,
    pending_jobs: int,
    busy: float,
    seed: int,
    time_limit: float,
    instance: Path | None,
    as_json: bool,
    child: Path | None,
) -> None:
    if child is not None:
        click.echo(json.dumps(run_cycle(child, time_limit)))
        return
    if instance is None:
        from bench_instances import cached_instance

        from vcsat.adapters.generate.generator import GeneratorOptions

        options = GeneratorOptions(nodes=nodes, pending_jobs=pending_jobs, busy_gpu_fraction=busy, seed=seed)
        instance = cached_instance(options)
    completed = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            str(instance),
            "--time-limit",
            str(time_limit),
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    if completed.returncode != 0:
        click.echo(completed.stderr, err=True, nl=False)
        raise SystemExit(completed.returncode)
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    if as_json:
        click.echo(json.dumps(report))
        return
    width = max(len(key) for key in report)
    for key, value in report.items():
        click.echo(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
