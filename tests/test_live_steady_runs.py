"""benchmarks/live_steady_kwok.py's ``--run EARLY[:TREE][:pin]``: each run's early-bind count,
source tree and whether the scheduler gets a CPU of its own, read apart correctly."""

from __future__ import annotations

import click
import pytest

from tests.scripts import load_script

live_steady = load_script("benchmarks/live_steady_kwok.py", "live_steady_kwok")

# (the option's text, what it reads as)
RUNS = [
    ("0", (0, None, False)),
    ("250", (250, None, False)),
    ("0:/trees/after", (0, "/trees/after", False)),
    ("0:pin", (0, None, True)),
    ("0:/trees/after:pin", (0, "/trees/after", True)),
    ("0:/trees/spin", (0, "/trees/spin", False)),  # a tree whose name ends in "pin" is not pinned
    ("0:/trees/pin/after", (0, "/trees/pin/after", False)),
]


@pytest.mark.parametrize(("text", "read"), RUNS)
def test_a_run_reads_its_count_tree_and_pinning(text: str, read: tuple[int, str | None, bool]) -> None:
    assert live_steady.parse_run(text) == read


@pytest.mark.parametrize("text", ["x", "", ":pin", "one:/trees/after"])
def test_a_run_without_a_count_is_refused(text: str) -> None:
    with pytest.raises(click.BadParameter, match="EARLY must be an integer"):
        live_steady.parse_run(text)
