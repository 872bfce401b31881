"""benchmarks/instructions.py: valgrind's instruction count of a Python command, steady from run to
run, growing with the work done, read from the tree put first on PYTHONPATH, and a failing command
said in one line."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tests.scripts import load_script

instructions = load_script("benchmarks/instructions.py", "instructions")

LOOP = "import work; work.run()"


def _tree(root: Path, name: str, iterations: int) -> Path:
    tree = root / name
    tree.mkdir()
    (tree / "work.py").write_text(f"def run():\n    total = 0\n    for i in range({iterations}):\n        total += i\n")
    return tree


def test_same_command_counts_alike_and_more_work_counts_more(tmp_path: Path) -> None:
    small, large = _tree(tmp_path, "small", 1_000), _tree(tmp_path, "large", 300_000)
    first = instructions.count(["-S", "-c", LOOP], small)
    again = instructions.count(["-S", "-c", LOOP], small)
    more = instructions.count(["-S", "-c", LOOP], large)
    assert abs(first - again) <= 0.01 * first
    # ~300k more loop iterations: tens of instructions each, far above the run-to-run spread
    assert more - first > 10 * 299_000
    assert more - first > 20 * abs(first - again)


def test_a_failing_command_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(click.ClickException, match="exit 3"):
        instructions.count(["-S", "-c", "raise SystemExit(3)"])


def test_command_line_prints_one_line_per_tree_and_round(tmp_path: Path) -> None:
    small, large = _tree(tmp_path, "small", 1_000), _tree(tmp_path, "large", 100_000)
    args = ["--tree", str(small), "--tree", str(large), "--", "-S", "-c", LOOP]
    result = CliRunner().invoke(instructions.main, args)
    assert result.exit_code == 0, result.output
    lines = [line.split("\t") for line in result.output.splitlines()]
    assert [tree for _, tree in lines] == [str(small), str(large)]
    counts = [int(number.replace(",", "")) for number, _ in lines]
    assert counts[1] > counts[0]
