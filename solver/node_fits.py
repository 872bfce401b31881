"""Per node, how many pods of one request fit there alone: kept as two arrays, made a dict only when read as one.

Why: the build works out every shape's (and bucket's) fit counts over the nodes with numpy, and
a dict of them per shape costs a Python entry per (shape, node): millions of entries at 10,000
nodes, while a cycle that stops after the greedy and the LP bound never reads one of them (the
greedy asks only which nodes they are, as a mask or an array). So the counts stay the arrays
they were made as; :attr:`vcsat.solver.problem.Shape.upper` makes the dict (the same keys in the
same ascending order, the same values) the first time something reads it, and a node query
reads :attr:`NodeFits.rows` or :meth:`NodeFits.mask` instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
from numpy.typing import NDArray


class NodeFits:
    """Nodes (ascending) and how many pods fit on each; read-only once made, so shapes of one
    request and eligibility share one."""

    __slots__ = ("_dict", "_flags", "_mask", "counts", "rows")

    def __init__(self, rows: NDArray[np.intp], counts: NDArray[np.int64]) -> None:
        self.rows = rows
        self.counts = counts
        self._dict: dict[int, int] | None = None
        self._mask: NDArray[np.bool_] | None = None
        self._flags: list[bool] | None = None

    @staticmethod
    def of(counts: Mapping[int, int]) -> NodeFits:
        """From a dict of counts by node (its order kept)."""
        rows = np.fromiter(counts.keys(), dtype=np.intp, count=len(counts))
        return NodeFits(rows, np.fromiter(counts.values(), dtype=np.int64, count=len(counts)))

    def as_dict(self) -> dict[int, int]:
        """The counts by node, made once (shared: read it, never change it)."""
        made = self._dict
        if made is None:
            made = self._dict = dict(zip(self.rows.tolist(), self.counts.tolist(), strict=True))
        return made

    def mask(self, size: int) -> NDArray[np.bool_]:
        """The nodes as a boolean array over ``size`` nodes, made once (shared: never change it)."""
        made = self._mask
        if made is None or made.size != size:
            made = np.zeros(size, dtype=np.bool_)
            made[self.rows] = True
            made.flags.writeable = False
            self._mask = made
        return made

    def flags(self, size: int) -> list[bool]:
        """:meth:`mask` as a list (a lookup per node costs less there), made once (never change it)."""
        made = self._flags
        if made is None or len(made) != size:
            made = self._flags = self.mask(size).tolist()
        return made

    def __len__(self) -> int:
        return int(self.rows.size)

    def __iter__(self) -> Iterator[int]:
        return iter(self.rows.tolist())

    def __contains__(self, node: object) -> bool:
        if self._dict is not None:
            return node in self._dict
        if not isinstance(node, int | np.integer):
            return False  # as the dict: no other key equals a node
        # A binary search: asked about a few nodes of a long list, no dict is made for it.
        at = int(np.searchsorted(self.rows, node))
        return at < self.rows.size and int(self.rows[at]) == int(node)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeFits):
            return NotImplemented
        return bool(np.array_equal(self.rows, other.rows) and np.array_equal(self.counts, other.counts))

    __hash__ = None  # type: ignore[assignment]  # equal by content, like the dict it stands for

    def __repr__(self) -> str:
        return f"NodeFits({self.as_dict()!r})"
