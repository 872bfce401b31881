"""The plain columns of `vcsat solve`'s table: alignment, cells of several lines, wrapping to the
console's width, and a property that nothing of a cell is lost or moved out of its column."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from vcsat.adapters.cli.columns import NARROWEST, layout, print_columns
from vcsat.adapters.cli.render import header_line, render_decision
from vcsat.adapters.convert.instance_file import read_snapshot
from vcsat.model import Decision, Policy, SolverStats
from vcsat.solver import solve

CASES = [
    # headers, rows, width, header line, body lines: three spaces part two columns
    (("a", "bb"), [("x", "y")], 80, " a   bb", [" x   y"]),
    (("name", "n"), [("long-name", "1"), ("s", "22")], 80, " name        n", [" long-name   1", " s           22"]),
    # a cell of two lines keeps its column; the row's other cells stand on its first line
    (("pg", "placed"), [("ns/a", "p0→n1\np1→n2")], 80, " pg     placed", [" ns/a   p0→n1", "        p1→n2"]),
    # too wide: the widest column is wrapped at word boundaries
    (
        ("k", "message"),
        [("a", "one two three four five six")],
        16,
        " k   message",
        [" a   one two", "     three four", "     five six"],
    ),
    # a column is never narrowed below its floor: the table may then be wider than asked
    (("k", "v"), [("a", "0123456789")], 4, " k   v", [" a   01234567", "     89"]),
]


@pytest.mark.parametrize(("headers", "rows", "width", "head", "body"), CASES)
def test_layout(headers: tuple[str, ...], rows: list[tuple[str, ...]], width: int, head: str, body: list[str]) -> None:
    header, rule, lines = layout(headers, rows, width)
    assert header == head
    assert lines == body
    assert set(rule) == {"─"}


def test_print_columns_writes_title_header_rule_and_body_in_order() -> None:
    console = Console(file=io.StringIO(), width=40, color_system=None)
    print_columns(console, ("pod", "reason"), [("ns/p", "Preempted")], title="evictions")
    printed = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert printed[0].strip() == "evictions"
    assert printed[1] == " pod    reason"
    assert set(printed[2]) == {"─"}
    assert printed[3] == " ns/p   Preempted"


def test_a_list_unfitted_from_the_margin_keeps_every_cell_whole() -> None:
    rows = [("a-very-long-job-name-that-would-not-fit", "Running"), ("b", "Pending")]
    header, rule, body = layout(("NAME", "PHASE"), rows, None, pad_edge=False)
    assert header == "NAME                                      PHASE"
    assert body == [
        "a-very-long-job-name-that-would-not-fit   Running",
        "b                                         Pending",
    ]
    assert len(rule) == len(body[0])


words = st.text(alphabet="abcdefghij→", min_size=1, max_size=12)
cells = st.lists(words, min_size=1, max_size=5).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(cells, cells, cells), min_size=1, max_size=6),
    width=st.integers(min_value=10, max_value=60),
)
def test_every_word_stays_in_its_column_and_fits_where_it_can(rows: list[tuple[str, str, str]], width: int) -> None:
    headers = ("first", "second", "third")
    header, _, body = layout(headers, rows, width)
    starts = [header.index(name) for name in headers]
    columns: list[list[str]] = [[], [], []]
    for line in body:
        padded = line.ljust(max(len(line), starts[-1] + 1))
        for column, start in enumerate(starts):
            end = starts[column + 1] if column + 1 < len(starts) else len(padded)
            # a cell's text starts at its column's start and ends before the next column's pad
            columns[column].append(padded[start:end].strip())
    for column in range(3):
        written = "".join(columns[column]).replace(" ", "")
        assert written == "".join(row[column] for row in rows).replace(" ", "")
    if sum(max(NARROWEST, len(name)) for name in headers) + 8 <= width:
        assert all(len(line) <= width for line in body)


def test_the_header_shows_large_objectives_in_full() -> None:
    stats = SolverStats(status="FEASIBLE", objective=5_033_443, bound=5_038_200, seconds=1.0)
    assert header_line(Decision(solver=stats)).startswith("solver FEASIBLE  objective 5033443  bound 5038200  ")


def test_the_table_names_every_podgroup_of_an_instance() -> None:
    snapshot = read_snapshot(Path(__file__).parent.parent / "instances" / "gang.yaml")
    decision = solve(snapshot, Policy(time_limit_s=5))
    console = Console(file=io.StringIO(), width=120, color_system=None)
    render_decision(decision, snapshot, console)
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    for outcome in decision.podgroups:
        assert outcome.podgroup in printed
    for binding in decision.bindings:
        assert binding.pod.partition("/")[2] in printed
