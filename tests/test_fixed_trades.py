"""benchmarks/fixed_trades.py: a cycle's decision after a fixed number of exchange trades.

On the contended shape in miniature: the lines name the trade count asked (as a replay records it),
the same count gives the same line twice (no clock decides it), and more trades never rank lower
(each trade is kept only where it ranks strictly higher). ``compare`` counts, per trade count, the
files where the second output ranks higher, lower or the same, and those within 1%.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scripts import load_script
from shape_files import shape_file

fixed_trades = load_script("benchmarks/fixed_trades.py", "fixed_trades")


def test_more_trades_never_rank_lower_and_a_count_decides_alike(tmp_path: Path) -> None:
    # Seed 2: on seed 1 the greedy's largest-first fill, kept aside, ranks above what three trades
    # reach, so every count decides alike there and no trade shows.
    path = shape_file(tmp_path, "contended", 80, 2)
    rows = fixed_trades.solve_at(path, [0, 1, 3, 3], ["search"])
    assert [row["trades"] for row in rows] == [0, 1, 3, 3]
    assert all(f"exchange_trades={row['trades']}" in row["skipped"] for row in rows)
    assert rows[2] == rows[3]
    ranks = [[level[1] for level in row["levels"]] for row in rows]
    assert ranks[0] <= ranks[1] <= ranks[2]
    assert ranks[0] < ranks[2], "the miniature is chosen so that a trade is kept within three"


def _row(file: str, trades: int, values: list[int], gap: float) -> dict[str, Any]:
    return {"file": file, "trades": trades, "gap": gap, "levels": [["level", value, value] for value in values]}


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (
            [_row("a", 2, [5, 9], 0.02), _row("b", 2, [5, 9], 0.0)],
            [_row("a", 2, [6, 1], 0.005), _row("b", 2, [5, 9], 0.0)],
            ["2 trades: second higher on 1, lower on 0, the same on 1; within 1%: first 1, second 2"],
        ),
        (
            [_row("a", 2, [5, 9], 0.0), _row("a", 4, [5, 9], 0.0)],
            [_row("a", 2, [5, 8], 0.0), _row("a", 4, [5, 10], 0.0), _row("c", 4, [9, 9], 0.0)],
            [
                "2 trades: second higher on 0, lower on 1, the same on 0; within 1%: first 1, second 1",
                "4 trades: second higher on 1, lower on 0, the same on 0; within 1%: first 1, second 1",
            ],
        ),
    ],
)
def test_compare_counts_files_per_trade_count(
    before: list[dict[str, Any]], after: list[dict[str, Any]], expected: list[str]
) -> None:
    assert fixed_trades.compare(before, after) == expected


def test_a_replay_runs_the_eviction_phase_and_no_level_counts_its_nominations(tmp_path: Path) -> None:
    # A saturated miniature: the replay (no clock) runs the eviction phase, which nominates waiting
    # pods to the room of lower-priority ones; the levels and the gap are the placement's alone, the
    # same as a replay that skipped the phase.
    path = shape_file(tmp_path, "saturated", 40, 2)
    [row] = fixed_trades.solve_at(path, [0], ["search"])
    [without] = fixed_trades.solve_at(path, [0], ["search", "evictions"])
    assert row["evictions"] > 0
    assert row["nominations"] > 0
    assert "evictions" not in row["skipped"]
    assert (without["evictions"], without["nominations"]) == (0, 0)
    assert (row["levels"], row["gap"]) == (without["levels"], without["gap"])
