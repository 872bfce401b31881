"""Plain text columns for the CLI's tables (a decision's PodGroups, the controller's lists of Jobs
and queues), laid out in one pass over their cells.

A decision at a few thousand nodes has tens of thousands of rows (one per PodGroup). Rich's table
measures and renders every cell as a renderable object, which took longer than the scheduling
cycle it reports on; this lays the same columns out from the strings' display widths, so the
table's cost stays a small fraction of the cycle's. The look follows the one the command always
had: three spaces between two columns, a bold header on a terminal, a rule under the header, cells
of several lines kept in their column, and the widest columns wrapped where the table would not
fit the console's width.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

PAD = 1
"""Spaces on each side of a cell."""

DIVIDER = " "
"""Between two columns' pads, so that three spaces part two columns, as in the tables the commands always printed."""

NARROWEST = 8
"""A column wrapped to fit the width keeps at least this many characters (or its header's)."""


def print_columns(
    console: Console,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    title: str = "",
    *,
    fit: bool = True,
    pad_edge: bool = True,
) -> None:
    """Print ``rows`` under ``headers`` on ``console``: fitted to its width, or (``fit=False``, as
    kubectl lists) every cell whole on its row's line; ``pad_edge=False`` starts the first column
    at the margin."""
    header_line, rule, body = layout(headers, rows, console.width if fit else None, pad_edge=pad_edge)
    if title:
        console.print(Text(title.center(_width(rule)).rstrip(), style="italic"))
    console.print(Text(header_line, style="bold"))
    console.file.write(rule + "\n" + "".join(line + "\n" for line in body))
    console.file.flush()


def layout(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None, *, pad_edge: bool = True
) -> tuple[str, str, list[str]]:
    """The header line, the rule under it and the body's lines of a table at most ``width`` wide
    (wider only where even the narrowest columns do not fit; as wide as its cells when None)."""
    cells = [[cell.split("\n") for cell in row] for row in rows]
    widths = [_width(header) for header in headers]
    for row in cells:
        for column, lines in enumerate(row):
            widest = max(_width(line) for line in lines)
            if widest > widths[column]:
                widths[column] = widest
    if width is not None:
        widths = _fitted(widths, [_width(header) for header in headers], width)
    body: list[str] = []
    for row in cells:
        # Unfitted, every line is within its column's width already: nothing to wrap.
        wrapped = row if width is None else [_wrapped(lines, widths[column]) for column, lines in enumerate(row)]
        for index in range(max(len(lines) for lines in wrapped)):
            line = _line([lines[index] if index < len(lines) else "" for lines in wrapped], widths)
            body.append(line if pad_edge else line[PAD:])
    rule = "─" * (_span(widths) - (0 if pad_edge else 2 * PAD))
    header_line = _line(list(headers), widths)
    return (header_line if pad_edge else header_line[PAD:]), rule, body


def _fitted(widths: list[int], header_widths: list[int], width: int) -> list[int]:
    """Narrow the widest column, one character at a time, until the table fits ``width``."""
    fitted = list(widths)
    floors = [min(natural, max(NARROWEST, header)) for natural, header in zip(widths, header_widths, strict=True)]
    excess = _span(fitted) - width
    while excess > 0:
        shrinkable = [column for column, value in enumerate(fitted) if value > floors[column]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda column: fitted[column])
        fitted[widest] -= 1
        excess -= 1
    return fitted


def _wrapped(lines: list[str], width: int) -> list[str]:
    out: list[str] = []
    for line in lines:
        if _width(line) <= width:
            out.append(line)
        else:
            out.extend(textwrap.wrap(line, width, break_long_words=True, break_on_hyphens=False) or [""])
    return out


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    pad = " " * PAD
    padded = (pad + cell + " " * (width - _width(cell)) + pad for cell, width in zip(cells, widths, strict=True))
    return DIVIDER.join(padded).rstrip()


def _span(widths: Sequence[int]) -> int:
    """The width of a table of these columns, pads and dividers included."""
    return sum(widths) + 2 * PAD * len(widths) + len(DIVIDER) * (len(widths) - 1)


def _width(text: str) -> int:
    """Display cells of ``text``: its length where it is ASCII (nearly every cell), else rich's count."""
    return len(text) if text.isascii() else cell_len(text)
