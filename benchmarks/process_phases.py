"""Where the whole ``vcsat solve`` process's wall time goes: start-up, imports, the cycle, output, exit.

``benchmarks/phases.py`` times the cycle inside one process (read to check). A user waits for the
whole command: the interpreter's start, the imports before the time limit's clock starts, the cycle,
printing the decision and the process's end. This runs ``vcsat solve`` in a child process as the
console script does (the same one-shot exit), marks the wall clock (``time.monotonic``, which every
process on the machine shares) at each phase's end by wrapping the command's own functions (no
change to them), and takes the end from the parent, which waits for the child to be gone:

    python benchmarks/process_phases.py 10k.json --time-limit 10 -o json
    python benchmarks/process_phases.py 1k.json --time-limit 1 --runs 3 --json

Phases: ``startup`` (from starting the child to its first line), ``imports`` (the command's
modules and the solver's), ``read_snapshot`` (from the clock's start, which the limit counts from),
``solve`` (its steps as in phases.py, ``inner``), ``check`` (with the JSON or YAML written out
beside the validator), ``output`` (the decision printed and flushed), ``exit`` (from the one-shot
exit to the parent seeing the child gone). ``over_limit``: the whole process's wall seconds less
the limit; ``from_clock``: the wall seconds from the clock's start to the end. The decision goes
to ``--out`` (default: the null device). Run on the tree to measure with ``PYTHONPATH`` on it; say
the machine's load next to the numbers.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

CHILD = "VCSAT_PROCESS_PHASES_LOG"
"""Set in the child's environment: the file it writes its marks to."""

INNER = {
    "build_problem": "build",
    "greedy": "greedy",
    "warm_start": "warm_start",
    "lp_bounds": "lp_bound",
    "_search": "search",
    "bindings": "decode",
    "outcomes": "explain",
    "_preempt": "evictions",
}
"""The solve's steps timed inside it (functions of vcsat.solver.solve), as phases.py names them."""


def child(log: str) -> None:
    """Run ``vcsat solve`` with this process's arguments as the console script, marking phases."""
    first = time.monotonic()
    marks: dict[str, float] = {"first_line": first}
    inner: dict[str, float] = {}
    import importlib

    from vcsat.adapters.cli import app, one_shot

    solver = importlib.import_module("vcsat.solver")
    solve_module = importlib.import_module("vcsat.solver.solve")
    checked = importlib.import_module("vcsat.solver.checked")
    marks["imports"] = time.monotonic()

    def timed(name: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                return function(*args, **kwargs)
            finally:
                inner[name] = inner.get(name, 0.0) + time.monotonic() - started

        return wrapper

    def marked(before: str | None, after: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if before is not None:
                marks[before] = time.monotonic()
            result = function(*args, **kwargs)
            if after == "output":
                sys.stdout.flush()
            marks[after] = time.monotonic()
            return result

        return wrapper

    for name, label in INNER.items():
        setattr(solve_module, name, timed(label, getattr(solve_module, name)))
    decisions: list[Any] = []
    solve = solver.solve

    def solve_kept(*args: Any, **kwargs: Any) -> Any:
        decisions.append(solve(*args, **kwargs))
        return decisions[-1]

    app.load_cycle = marked("clock", "read_snapshot", app.load_cycle)  # type: ignore[attr-defined]
    solver.solve = marked("solve_start", "solve", solve_kept)
    solver.check = marked(None, "check", solver.check)
    # The command solves and checks through vcsat.solver.checked: its solve ends the "solve"
    # phase; "check" ends with the validator's verdict, and holds the writing of the JSON or YAML
    # output (made beside the validator's child where a second core runs it); "output" is the
    # printing (the whole table, which is printed as it is made).
    checked.solve = marked("solve_start", "solve", solve_kept)
    checked.Checked.violations = marked(None, "check", checked.Checked.violations)
    app.emit_decision = marked(None, "output", app.emit_decision)  # type: ignore[attr-defined]
    leave = one_shot.leave

    def leave_logged(code: int = 0) -> None:
        marks["leave"] = time.monotonic()
        marks.setdefault("output", marks["leave"])  # printed by the command itself, flushed by leave
        stats = decisions[-1].solver if decisions else None
        record = {
            "marks": marks,
            "inner": inner,
            "decision": None
            if stats is None
            else stats.model_dump(include={"status", "objective", "bound", "skipped"}),
        }
        Path(log).write_text(json.dumps(record))
        leave(code)

    one_shot.leave = leave_logged  # type: ignore[assignment]
    sys.argv = ["vcsat", "solve", *sys.argv[1:]]
    app.main()


def one_run(arguments: list[str], out: Path, time_limit: float | None) -> dict[str, Any]:
    """One child process's phases, in wall seconds."""
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "marks.json"
        env = {**os.environ, CHILD: str(log)}
        with out.open("w") as sink:
            started = time.monotonic()
            process = subprocess.Popen([sys.executable, __file__, *arguments], stdout=sink, env=env)
            _, status, usage = os.wait4(process.pid, 0)
            ended = time.monotonic()
        record = json.loads(log.read_text()) if log.exists() else {"marks": {}, "inner": {}, "decision": None}
    marks = record["marks"]
    order = ["first_line", "imports", "read_snapshot", "solve", "check", "output", "leave"]
    seconds: dict[str, float] = {}
    if "first_line" in marks:
        seconds["startup"] = marks["first_line"] - started
    for before, after in itertools.pairwise(order):
        if before in marks and after in marks:
            name = {"read_snapshot": "read_snapshot", "leave": "to_exit"}.get(after, after)
            seconds[name] = marks[after] - (marks["clock"] if after == "read_snapshot" else marks[before])
    if "leave" in marks:
        seconds["exit"] = ended - marks["leave"]
    total = ended - started
    report: dict[str, Any] = {
        "exit_status": os.waitstatus_to_exitcode(status),
        "wall": round(total, 3),
        "cpu": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_kib": usage.ru_maxrss,
        "seconds": {name: round(value, 3) for name, value in seconds.items()},
        "inner": {name: round(value, 3) for name, value in record["inner"].items()},
        "from_clock": round(ended - marks["clock"], 3) if "clock" in marks else None,
        "over_limit": None if time_limit is None else round(total - time_limit, 3),
        "decision": record["decision"],
    }
    return report


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--runs", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=Path(os.devnull), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON line per run.")
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def main(runs: int, out: Path, as_json: bool, arguments: tuple[str, ...]) -> None:
    """Run ``vcsat solve ARGUMENTS`` in a child process RUNS times and print each run's phases."""
    words = list(arguments)
    limit = float(words[words.index("--time-limit") + 1]) if "--time-limit" in words else None
    for _ in range(runs):
        report = one_run(words, out, limit)
        if as_json:
            click.echo(json.dumps(report))
            continue
        click.echo(
            f"wall {report['wall']} s (over the limit {report['over_limit']}), cpu {report['cpu']} s, "
            f"peak {report['peak_rss_kib']} KiB, exit {report['exit_status']}"
        )
        click.echo("  " + ", ".join(f"{k} {v}" for k, v in report["seconds"].items()))
        click.echo("  solve: " + ", ".join(f"{k} {v}" for k, v in report["inner"].items()))
        click.echo(f"  decision: {report['decision']}")


if __name__ == "__main__":
    if os.environ.get(CHILD):
        child(os.environ[CHILD])
    else:
        main()
