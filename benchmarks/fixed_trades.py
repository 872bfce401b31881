"""What a cycle decides after a fixed number of exchange trades, whatever the machine's load.

On a 1 s cycle the exchange gets the few trades the wall plan lets start (``exchange_trades=N``
among ``solver.skipped``), and how many depends on how fast the machine ran the steps before it:
on a shared machine the same tree decides differently from one run to the next, and two trees
timed one after the other are compared on different trade counts. Two ways of trading (an order,
a choice of what to take out) are compared fairly on the same count instead: each file is solved
with ``wall=False`` as a replay that ran N trades (and skipped what the 1 s cycle skips: the
search, which does not fit there, and the whole-number bound, which a 1 s cycle at 1,000 nodes
has no time left for; ``--skip search`` alone shows what a cycle with that time prints), for
each N asked, and one JSON line per (file, N) gives the
status, the gap, every level with its bound, and how many pods the eviction phase evicts and
nominates (it runs in the replay too; its nominations count in no level).

    PYTHONPATH=TREE python benchmarks/fixed_trades.py FILES... --trades 2,4,8 --label mine > mine.jsonl
    python benchmarks/fixed_trades.py --compare main.jsonl mine.jsonl

``--compare`` reads two such outputs and says, per N, on how many files each ranks higher in the
objective's first levels (compared as one tuple, as the solver compares decisions) and how many
are within 1%.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import click


def solve_at(path: Path, trades: list[int], skip: list[str], kinds: bool = False) -> list[dict[str, Any]]:
    from contextlib import nullcontext

    from vcsat.adapters.convert import instance_file
    from vcsat.model import Policy
    from vcsat.solver import solve

    if kinds:
        from trade_kinds import recording, summary
    snapshot = instance_file.read_snapshot(path)
    out = []
    for count in trades:
        with recording() if kinds else nullcontext([]) as events:
            decision = solve(
                snapshot, Policy(time_limit_s=1.0), wall=False, skip=frozenset({*skip, f"exchange_trades={count}"})
            )
        out.append(
            {
                "file": f"{path.parent.name}/{path.name}",
                "trades": count,
                "status": decision.solver.status,
                "gap": decision.solver.gap,
                "skipped": decision.solver.skipped,
                "levels": [[level.level, level.value, level.bound] for level in decision.solver.levels],
                # The eviction phase runs in a replay (nothing skips it without a clock) and its
                # nominations are not placed work: the levels and the gap say nothing of it.
                "evictions": len(decision.evictions),
                "nominations": len(decision.nominations),
                **({"events": events, "kinds": summary(events)} if kinds else {}),
            }
        )
    return out


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[str]:
    """Per trade count: files where ``after`` ranks higher, lower, the same; files within 1%."""
    first = {(row["file"], row["trades"]): row for row in before}
    lines = []
    for count in sorted({row["trades"] for row in after}):
        higher = lower = same = within_before = within_after = 0
        for row in after:
            other = first.get((row["file"], count))
            if row["trades"] != count or other is None:
                continue
            ours, theirs = [level[1] for level in row["levels"]], [level[1] for level in other["levels"]]
            higher += ours > theirs
            lower += ours < theirs
            same += ours == theirs
            within_before += other["gap"] <= 0.01
            within_after += row["gap"] <= 0.01
        lines.append(
            f"{count} trades: second higher on {higher}, lower on {lower}, the same on {same}; "
            f"within 1%: first {within_before}, second {within_after}"
        )
    return lines


@click.command()
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--trades", default="2,4,8", show_default=True, help="Trade counts, comma-separated.")
@click.option(
    "--skip", multiple=True, default=("search", "whole_bound"), show_default=True, help="Steps the replay skips."
)
@click.option("--label", default="", help="Added to each line as its 'label'.")
@click.option(
    "--kinds", is_flag=True, help="Add the exchange's looks and trades, in order, and per kind (trade_kinds.py)."
)
@click.option("--compare", "to_compare", nargs=2, type=click.Path(exists=True, path_type=Path))
def main(
    files: tuple[Path, ...],
    trades: str,
    skip: tuple[str, ...],
    label: str,
    kinds: bool,
    to_compare: tuple[Path, Path] | None,
) -> None:
    if to_compare:
        before, after = ([json.loads(line) for line in path.read_text().splitlines() if line] for path in to_compare)
        for line in compare(before, after):
            click.echo(line)
        return
    for path in files:
        for row in solve_at(path, [int(count) for count in trades.split(",")], list(skip), kinds):
            click.echo(json.dumps({"label": label, **row}))
        # The solver's pauses leave what a cycle made in the oldest generation, which CPython
        # seldom collects in full: a long run over many files would keep every file's cyclic
        # garbage (a live scheduler's tenure collects it; this loop does it between files).
        gc.collect()


if __name__ == "__main__":
    main()
