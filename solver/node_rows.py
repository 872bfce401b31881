"""The greedy room per node as one contiguous row of numbers, for tests over a few scattered nodes.

A kept ranking of the greedy (:class:`vcsat.solver.greedy._Ranking`) tests again, and prices
again, the nodes whose room changed since it last read the room: a few hundred scattered nodes at
a time, many thousands of times a cycle. Gathered resource by resource, each read costs a numpy
call per resource and per test, and those calls, not the nodes, are its cost. Gathered as rows of
one node-major array, the whole fit test (every resource, the overcommit test, the free whole GPUs)
is one gather, one compare against the asked amounts laid out row after row, and one look at each
row's bytes; the pricing then reads its columns from the rows already gathered.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from vcsat.model.gpus import FULL_GPU_MILLI

TILED_NODES = 2048
"""Up to this many nodes a test compares against its asked amounts laid out once per node (an
elementwise compare); more nodes broadcast one row of them (slower per node, but rare)."""

_ALL_MET = np.uint64(0x0101010101010101)
"""Eight compare results, all true, read as one 64-bit word (a true byte is 1)."""

_NO_TEST = np.iinfo(np.int64).min
"""The asked amount of a column that is not tested: every value meets it."""


class NodeRows:
    """Per node: its free room per resource, then its free whole GPU devices, the GPU thousandths
    free on them and on its shared GPUs (whole × 1000 + the shared ones' left), the most one shared
    GPU has left (-1: none), and its unpriced rank (free GPUs × nodes + node); padded with zeros to
    a multiple of eight columns. The room (:class:`vcsat.solver.greedy.Room`) keeps it equal to its
    other mirrors as pods come and go."""

    def __init__(
        self,
        free: NDArray[np.int64],
        whole: NDArray[np.int64],
        share_free: NDArray[np.int64],
        share_room: NDArray[np.int64],
        level_rank: NDArray[np.int64],
        needs: dict[tuple[int, ...], NDArray[np.int64]] | None = None,
    ) -> None:
        """``needs``: the :meth:`need` memo of another table of the same problem (same nodes and
        resources, so the same layouts), shared: the exchange makes two tables a trade."""
        count, resources = free.shape
        self.resources = resources
        self.whole_col = resources
        self.gpu_milli_col = resources + 1
        self.share_room_col = resources + 2
        self.level_rank_col = resources + 3
        self.words = -(-(resources + 4) // 8)
        """Eight-column words per row."""
        self.width = 8 * self.words
        rows = np.zeros((count, self.width), dtype=np.int64)
        rows[:, :resources] = free
        rows[:, self.whole_col] = whole
        rows[:, self.gpu_milli_col] = whole * FULL_GPU_MILLI + share_free
        rows[:, self.share_room_col] = share_room
        rows[:, self.level_rank_col] = level_rank
        self.rows = rows
        self._tiled = min(TILED_NODES, count)
        self._needs: dict[tuple[int, ...], NDArray[np.int64]] = {} if needs is None else needs

    def set_row(
        self, node: int, free: Sequence[int], whole: int, share_free: int, share_room: int, level_rank: int
    ) -> None:
        """The node's row as it is now: its free room, free whole GPU devices, the thousandths free on
        them and its shared GPUs, the most a shared GPU has left and its unpriced rank, in one
        write (the room changes a node's row once per take or give)."""
        self.rows[node, : self.level_rank_col + 1] = [
            *free,
            whole,
            whole * FULL_GPU_MILLI + share_free,
            share_room,
            level_rank,
        ]

    def need(self, request: tuple[int, ...], whole: int) -> NDArray[np.int64]:
        """What one pod of ``request`` (``whole`` of it whole GPUs) asks of a row, laid out for
        :meth:`fit` (made once per request): each resource's amount, 0 where it asks none (a
        negative free amount, an overcommitted node, then fails), the whole GPUs; nothing else."""
        key = (*request, whole)
        tiled = self._needs.get(key)
        if tiled is None:
            need = np.full(self.width, _NO_TEST, dtype=np.int64)
            need[: self.resources] = [max(0, amount) for amount in request]
            need[self.whole_col] = whole
            tiled = self._needs[key] = np.tile(need, max(1, self._tiled))
        return tiled

    def fit(self, nodes: NDArray[np.int64], need: NDArray[np.int64]) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
        """Per node of ``nodes``, whether no resource is overcommitted there and it has the room
        and the free whole GPUs ``need`` (:meth:`need`) asks; and the gathered rows."""
        rows = self.rows.take(nodes, axis=0)
        flat = rows.reshape(-1)
        # laid out per node where it reaches; beyond, one row broadcast over them all
        met = flat >= need[: flat.size] if flat.size <= need.size else (rows >= need[: self.width]).reshape(-1)
        words = met.view(np.uint64)
        if self.words == 1:
            ok: NDArray[np.bool_] = words == _ALL_MET
        else:
            ok = np.all(words.reshape(-1, self.words) == _ALL_MET, axis=1)
        return ok, rows
