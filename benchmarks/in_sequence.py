"""Decisions of files solved one after another in one process, against each file solved alone.

A process that solves cycle after cycle keeps carries from one snapshot to the next (the node
rooms, admission's group sums, the pricing tallies, the change set between two snapshots: see
``solver/changes.py``); the live scheduler's snapshots share most objects, files read one after
another share none. Whatever came before, a cycle must decide as a fresh process does. This solves
FILES in order (``--rounds`` times, so that a file also follows itself) in one process with
``wall=False``, the search skipped and each trade count of ``--trades`` (as ``fixed_trades.py``),
and prints one JSON line per (file, trades) with a digest of the decision (bindings, nominations,
evictions, PodGroup outcomes, objective, bound, levels, skipped steps, status and gap);
``--alone`` solves each (file, trades) in a process of its own instead; ``--compare`` says which
lines of the first output differ from the second's.

    python benchmarks/in_sequence.py FILES... --rounds 2 --trades 0,2,8 > sequence.jsonl
    python benchmarks/in_sequence.py FILES... --alone --trades 0,2,8 > alone.jsonl
    python benchmarks/in_sequence.py --compare sequence.jsonl alone.jsonl
"""

from __future__ import annotations

import gc
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click


def digest(decision: Any) -> str:
    solver = decision.solver
    body = [
        [item.model_dump(mode="json") for item in decision.bindings],
        [item.model_dump(mode="json") for item in decision.nominations],
        [item.model_dump(mode="json") for item in decision.evictions],
        [item.model_dump(mode="json") for item in decision.podgroups],
        solver.objective,
        solver.bound,
        [[level.level, level.value, level.bound] for level in solver.levels],
        solver.skipped,
        solver.status,
        solver.gap,
    ]
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:16]


def in_sequence(paths: list[Path], trades: list[int], rounds: int) -> None:
    from vcsat.adapters.convert import instance_file
    from vcsat.model import Policy
    from vcsat.solver import solve

    policy = Policy(time_limit_s=1.0)
    for number in range(rounds):
        for path in paths:
            snapshot = instance_file.read_snapshot(path)
            for count in trades:
                decision = solve(snapshot, policy, wall=False, skip=frozenset({"search", f"exchange_trades={count}"}))
                line = {"file": str(path), "trades": count, "round": number, "digest": digest(decision)}
                click.echo(json.dumps(line))
            del snapshot
            gc.collect()  # many files in one process: let each one's objects go


def compare(first: Path, second: Path) -> list[str]:
    """The lines of ``first`` whose digest differs from ``second``'s for the same file and trades."""
    known = {(row["file"], row["trades"]): row["digest"] for row in map(json.loads, second.read_text().splitlines())}
    rows = [json.loads(line) for line in first.read_text().splitlines()]
    out = [json.dumps(row) for row in rows if known.get((row["file"], row["trades"])) != row["digest"]]
    return [*out, f"{len(rows) - len(out)} of {len(rows)} the same"]


@click.command()
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--trades", default="0,2,8", show_default=True, help="Exchange trade counts, comma-separated.")
@click.option("--rounds", type=int, default=1, show_default=True, help="Times the whole list is solved.")
@click.option("--alone", is_flag=True, help="Each (file, trades) in a process of its own.")
@click.option("--compare", "compared", nargs=2, type=click.Path(exists=True, path_type=Path), help="Two outputs.")
def main(files: tuple[Path, ...], trades: str, rounds: int, alone: bool, compared: tuple[Path, Path] | None) -> None:
    if compared:
        for line in compare(*compared):
            click.echo(line)
        return
    counts = [int(count) for count in trades.split(",")]
    if not alone:
        in_sequence(list(files), counts, rounds)
        return
    for path in files:
        for count in counts:
            command = [sys.executable, __file__, str(path), "--trades", str(count)]
            click.echo(subprocess.run(command, capture_output=True, text=True, check=True).stdout, nl=False)


if __name__ == "__main__":
    main()
