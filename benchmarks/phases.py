"""Where one scheduling cycle's time goes: read, snapshot, build, greedy, fills, search, explain, evictions, check.

Runs one cycle (as ``vcsat solve`` then the checker) on an instance file in this process and
times each phase (wall clock, and CPU seconds of all threads) by wrapping the solver's own steps
(no change to the solver), then prints the seconds per phase, the decision's quality figures and
the peak RSS.

    python benchmarks/phases.py /tmp/10k.json --time-limit 10
    python benchmarks/phases.py my.json --json --profile /tmp/cycle.prof   # and a cProfile dump
    python benchmarks/phases.py my.json --time-limit 2 --cpu-clock   # the deadline as if idle
    python benchmarks/phases.py 1k.json --time-limit 1 --json --counters   # and why a run was slow
    python benchmarks/phases.py 1k.json --time-limit 1 --slow-host 1.5   # as on a host 1.5x slower

``--counters`` adds the process's counters over the cycle (user and kernel CPU, page faults,
context switches, the collector's passes, the hypervisor's steal) and the host's paces measured
just before and after it (benchmarks/host_counters.py): a slow run with the same work and slower
paces is the machine's, more faults or passes the process's.

The box the benchmarks run on is shared: say its load next to the numbers.
"""

from __future__ import annotations

import cProfile
import json
import resource
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click


def _peak_mib() -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run(
    path: Path, time_limit_s: float, workers: int | None, counters: bool = False, kinds: bool = False
) -> dict[str, Any]:
    import importlib
    from contextlib import nullcontext

    from vcsat.adapters.convert import instance_file
    from vcsat.model import Policy
    from vcsat.solver import check

    solve_module = importlib.import_module("vcsat.solver.solve")

    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started, cpu_started = time.perf_counter(), time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started
                cpu[name] = cpu.get(name, 0.0) + time.process_time() - cpu_started

        return wrapper

    @contextmanager
    def phase(name: str) -> Any:
        started, cpu_started = time.perf_counter(), time.process_time()
        yield
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started
        cpu[name] = cpu.get(name, 0.0) + time.process_time() - cpu_started

    originals = {
        name: getattr(solve_module, name)
        for name in (
            "build_problem",
            "greedy",
            "greedy_by_gain",
            "lp_bounds",
            "solve_exact",
            "outcomes",
            "bindings",
            "_preempt",
            "whole_bounds",
        )
        if hasattr(solve_module, name)  # a tree before the whole-number bound has none
    }
    labels = {
        "build_problem": "build",
        "greedy": "greedy",
        "greedy_by_gain": "second_fill",
        "lp_bounds": "lp_bound",
        "solve_exact": "search",
        "outcomes": "explain",
        "bindings": "decode",
        "_preempt": "evictions",  # the eviction phase, set-up and models (and CP-SAT's import, if first)
        "whole_bounds": "whole_bound",
    }
    for name, function in originals.items():
        setattr(solve_module, name, timed(labels[name], function))
    read_objects = instance_file.read_objects
    instance_file.read_objects = timed("read", read_objects)  # type: ignore[assignment]
    if kinds:
        from trade_kinds import recording, summary
    events: list[dict[str, Any]] = []
    if counters:
        import host_counters

        # Before the cycle, and not inside it: the paces' own faults and loops are not the cycle's.
        paces = {"python_ms": host_counters.python_pace(), "fault_us": host_counters.fault_pace()}
        collector = host_counters.collector_passes()
        passes = collector.__enter__()
        before = host_counters.take()
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        cycle_started = time.monotonic()
        with phase("read+snapshot"):
            snapshot = instance_file.read_snapshot(path)
        policy = Policy(time_limit_s=time_limit_s, **({"num_workers": workers} if workers else {}))
        with phase("solve"), recording() if kinds else nullcontext(events) as events:
            # The time limit counts from before the read, as ``vcsat solve`` counts it.
            decision = solve_module.solve(snapshot, policy, started=cycle_started)
        with phase("check"):
            violations = check(snapshot, decision, policy)
        total, cpu_total = time.perf_counter() - started, time.process_time() - cpu_started
        if counters:
            counted = {**host_counters.difference(before, host_counters.take()), **paces}
            counted["python_ms_after"] = host_counters.python_pace()
            counted["fault_us_after"] = host_counters.fault_pace()
            counted["heap_ms"] = host_counters.heap_pace([*snapshot.pods, *snapshot.nodes, *snapshot.podgroups])
    finally:
        if counters:
            collector.__exit__(None, None, None)
        for name, function in originals.items():
            setattr(solve_module, name, function)
        instance_file.read_objects = read_objects  # type: ignore[assignment]
    for split in (seconds, cpu):
        split["snapshot"] = split.pop("read+snapshot") - split.get("read", 0.0)
        inside = sum(split.get(label, 0.0) for label in labels.values())
        split["solve_other"] = split.pop("solve") - inside
    return {
        "instance": str(path),
        "nodes": len(snapshot.nodes),
        "pods": len(snapshot.pods),
        "seconds": {name: round(value, 2) for name, value in seconds.items()},
        "cpu_seconds": {name: round(value, 2) for name, value in cpu.items()},
        "cycle_seconds": round(total, 2),
        "cycle_cpu_seconds": round(cpu_total, 2),
        "status": decision.solver.status,
        "skipped": decision.solver.skipped,
        "wall_stopped": decision.solver.wall_stopped,
        "objective": decision.solver.objective,
        "bound": decision.solver.bound,
        "gap": decision.solver.gap,
        "levels": [[level.level, level.value, level.bound] for level in decision.solver.levels],
        "pods_bound": len(decision.bindings),
        "evictions": len(decision.evictions),
        "nominations": len(decision.nominations),
        "violations": len(violations),
        "peak_rss_mib": _peak_mib(),
        **({"counters": {**counted, "gc": passes}} if counters else {}),
        **({"events": events, "kinds": summary(events)} if kinds else {}),
    }


@click.command()
@click.argument("instance", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--time-limit", type=float, default=10.0, show_default=True)
@click.option("--workers", type=int, default=None)
@click.option("--profile", type=click.Path(path_type=Path), help="Also write a cProfile dump here.")
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--cpu-clock",
    is_flag=True,
    help="Count the time limit in this process's CPU seconds (time.monotonic reads time.process_time): "
    "on a machine busy with other work the cycle's deadline then acts as on an idle one (CP-SAT's own "
    "wall limits excepted).",
)
@click.option(
    "--slow-host",
    type=click.FloatRange(min=1.0),
    default=None,
    help="Run as on a host this many times slower, CPU equal to wall: every Python clock reads this "
    "process's CPU seconds times the factor (benchmarks/slow_host.py; implies --cpu-clock).",
)
@click.option(
    "--kinds",
    is_flag=True,
    help="Also report the exchange's looks and trades, in order, and per kind (benchmarks/trade_kinds.py).",
)
@click.option(
    "--counters",
    is_flag=True,
    help="Also report the process's counters over the cycle and the host's pace just before it "
    "(benchmarks/host_counters.py).",
)
def main(
    instance: Path,
    time_limit: float,
    workers: int | None,
    profile: Path | None,
    as_json: bool,
    cpu_clock: bool,
    slow_host: float | None,
    counters: bool,
    kinds: bool,
) -> None:
    if slow_host is not None:
        import slow_host as slowing

        slowing.slow_the_clocks(slow_host)
    elif cpu_clock:
        # Before the solver is imported: its clocks (and their defaults) read time.monotonic.
        time.monotonic = time.process_time
    if profile is not None:
        profiler = cProfile.Profile()
        report = profiler.runcall(run, instance, time_limit, workers, counters, kinds)
        profiler.dump_stats(profile)
    else:
        report = run(instance, time_limit, workers, counters, kinds)
    if as_json:
        click.echo(json.dumps(report))
        return
    for key, value in report.items():
        click.echo(f"{key:<14}  {value}")


if __name__ == "__main__":
    main()
