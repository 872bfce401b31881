"""benchmarks/shape_seeds.py: the gap on every shape at seeds nobody tuned on.

- A table of the pure pieces: the first level short of its bound, the trades a cycle recorded, the
  summary's count within the target and its worst file.
- The command on two small shapes at one seed: one JSON line per file with a gap the cycle's bound
  and objective give, no violations, the files generated once and read again on a second run (not
  rewritten), and an unknown shape refused with exit status 2 naming it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from scripts import load_script

load_script("benchmarks/phases.py", "phases")
load_script("benchmarks/shapes.py", "shapes")
shape_seeds = load_script("benchmarks/shape_seeds.py", "shape_seeds")

LEVELS = [["fair 1", 10, 10], ["fair 2", 7, 9], ["work 1000", 3, 5]]

# (levels, the first short)
FIRST_SHORT = [
    (LEVELS, "fair 2: 7 of 9"),
    ([["fair 1", 10, 10]], ""),
    ([], ""),
    ([["work 0", 4, 5], ["work -1", 1, 2]], "work 0: 4 of 5"),
]


@pytest.mark.parametrize(("levels", "short"), FIRST_SHORT)
def test_the_first_level_short_of_its_bound(levels: list[list[Any]], short: str) -> None:
    assert shape_seeds.first_short(levels) == short


# (skipped steps, the trades that ran as recorded)
TRADES = [
    (["search", "exchange_trades=3"], "3"),
    (["exchange_trades=0", "evictions"], "0"),
    (["search"], ""),
    ([], ""),
]


@pytest.mark.parametrize(("skipped", "ran"), TRADES)
def test_the_trades_a_cycle_recorded(skipped: list[str], ran: str) -> None:
    assert shape_seeds.trades(skipped) == ran


def _row(shape: str, seed: int, gap: float, seconds: float = 0.5) -> dict[str, Any]:
    return {"shape": shape, "seed": seed, "gap": gap, "cycle_seconds": seconds}


# (rows, the summary)
SUMMARIES = [
    ([], "no files"),
    (
        [_row("a", 1, 0.004), _row("b", 1, 0.01, 0.9), _row("c", 2, 0.0101)],
        "within 1%: 2 of 3; worst c s2 1.010%; slowest cycle 0.90 s",
    ),
    ([_row("a", 5, 0.0)], "within 1%: 1 of 1; worst a s5 0.000%; slowest cycle 0.50 s"),
]


@pytest.mark.parametrize(("rows", "said"), SUMMARIES)
def test_the_summary_counts_within_the_target_and_names_the_worst(rows: list[dict[str, Any]], said: str) -> None:
    assert shape_seeds.summary(rows) == said


def test_the_command_runs_each_shape_once_generated_then_reused(tmp_path: Path) -> None:
    args = ["--seeds", "3", "--shapes", "contended,default", "--nodes", "40", "--dir", str(tmp_path), "--json"]
    first = CliRunner().invoke(shape_seeds.main, args)
    assert first.exit_code == 0, first.output
    lines = first.output.strip().splitlines()
    rows = [json.loads(line) for line in lines[:-1]]
    assert [(row["shape"], row["seed"]) for row in rows] == [("contended", 3), ("default", 3)]
    for row in rows:
        assert row["violations"] == 0
        assert 0.0 <= row["gap"] < 1.0
        assert row["status"] in {"OPTIMAL", "WITHIN_GAP", "FEASIBLE", "FALLBACK"}
        assert row["trades"] == shape_seeds.trades(row["skipped"])
    assert lines[-1].startswith(f"within 1%: {sum(row['gap'] <= 0.01 for row in rows)} of 2;")
    files = sorted(tmp_path.glob("*.json"))
    assert [f.name for f in files] == ["contended-s3-n40.json", "default-s3-n40.json"]
    written = {f: f.stat().st_mtime_ns for f in files}
    again = CliRunner().invoke(shape_seeds.main, args)
    assert again.exit_code == 0, again.output
    assert {f: f.stat().st_mtime_ns for f in files} == written  # read again, not rewritten


def test_an_unknown_shape_is_refused_naming_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(shape_seeds.main, ["--seeds", "1", "--shapes", "tiny", "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "unknown shape 'tiny'" in result.output
    assert not list(tmp_path.iterdir())
