"""The nodes' free room that admission by fit (rule 6 of :mod:`vcsat.solver.enqueue`) places gangs on.

A gang is placed greedily, pod by pod (largest first, each on the eligible node it leaves least GPU
room on, then least cpu, then the first in node order), and takes that room only if all its pods
fit. A heuristic, so it may refuse a gang that some packing would fit (it then waits as Volcano's
would); it never admits one whose pods fit nowhere.

How it stays cheap at 10,000 nodes, where a pass places tens of thousands of pods: each pod's
shape (eligibility key, request vector, order in its gang) is made once; a pod's test reads one
contiguous row per resource it asks for; and the node order (least GPU room, then least cpu, then
node index) is one packed number per node, updated where a pod lands. The nodes are also kept
sorted by that number, so a pod's best node is usually found by a binary search to the first node
with its GPU count and cpu left, and a few checks from there (skipping each GPU level's nodes with
too little cpu); a pod whose first candidates all fail (a rare label, a resource the order does not
see) falls back to one ``argmin`` over every node. Both find the first fitting node in the same
order. Tested against a plain scan of all nodes.

How many nodes have each GPU room is counted as the room changes: a gang with a pod asking for more
GPUs than any node has left is refused without a search. Once the admitted gangs have taken every
GPU (a cluster whose admissions exceed its GPUs), every later gang that asks for one is refused at
that cost, the verdict the search would give.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from vcsat.model import Pod, Snapshot
from vcsat.model import resources as res
from vcsat.solver.cycle import PodKeys
from vcsat.solver.rules import predicates


def bits(mask: int, count: int) -> NDArray[np.bool_]:
    """Bit ``i`` of a predicates mask as element ``i`` of a boolean array of ``count``."""
    if count == 0:
        return np.zeros(0, dtype=np.bool_)
    text = format(mask, f"0{count}b")[::-1].encode()
    rows: NDArray[np.bool_] = np.frombuffer(text, dtype=np.uint8) == ord("1")
    return rows


_SPAN = 1 << 30
"""GPU and cpu room below this (in absolute value) pack into one int64 rank (cpu in millicores)."""
_LAST = np.iinfo(np.int64).max
_SCAN = 24
"""Candidates checked one by one in the sorted order before a pod falls back to the ``argmin``."""

_ShapeKey = tuple[predicates.EligibilityKey, tuple[tuple[str, int], ...]]
_Request = tuple[list[int], tuple[tuple[int, int], ...], int, int, tuple[tuple[list[int], int], ...]]
"""A request as the columns it asks for, those columns with their amounts, its GPU and cpu amounts
(Python ints, read once per pod placed), and the room's row of each column it asks for with the
amount (what a node's test reads). Its vector over all columns is made only for the ``argmin``
(:meth:`FreeRoom._array`): most pods are placed by the sorted order, which never reads it."""
_PodInfo = tuple[Pod, tuple[int, int, str], _ShapeKey, _Request | None]


class FreeRoom:
    """What each Ready, uncordoned node has free now (allocatable less its bound pods' requests),
    and what admitted gangs take of it (see the module docstring)."""

    def __init__(self, snapshot: Snapshot, keys: PodKeys | None = None) -> None:
        self.keys = keys or PodKeys()
        usable = [node for node in snapshot.nodes if node.ready and not node.unschedulable]
        # The cycle's index of every node (the build's own, so its key masks are shared too): a
        # node's bit depends on that node alone, so the usable nodes' rows are picked from it.
        self.index = predicates.node_index(snapshot.nodes)
        self._usable: NDArray[np.intp] | None = None
        if len(usable) != len(snapshot.nodes):
            self._usable = np.array(
                [i for i, node in enumerate(snapshot.nodes) if node.ready and not node.unschedulable], dtype=np.intp
            )
        on_node = snapshot.pods_on_node
        self.columns = {name: i for i, name in enumerate(sorted({r for node in usable for r in node.allocatable}))}
        table = [[0] * len(usable) for _ in self.columns]
        for row, node in enumerate(usable):
            free = dict(node.allocatable)
            for pod in on_node.get(node.name, ()):
                for name, amount in pod.requests.items():
                    free[name] = free.get(name, 0) - amount
            for name, amount in free.items():
                column = self.columns.get(name)
                if column is not None:
                    table[column][row] = amount
        self._table = np.array(table, dtype=np.int64).reshape(len(self.columns), len(usable))
        """:attr:`free` as last brought up to date with ``_rows`` (see :meth:`_sync`)."""
        self._rows: list[list[int]] = table
        """Per resource and node, the free room as Python ints: what a pod's placement reads and writes
        (a NumPy element costs several times a list's); the table follows when the ``argmin`` needs it."""
        self._stale: set[int] = set()
        """Nodes whose room (and rank) changed since the table was last brought up to date."""
        # A resource already overcommitted on a node stays so (a pod that asks for it never fits
        # there, one that does not leaves it as it is): those nodes are checked on every resource.
        overcommitted = np.any(self._table < 0, axis=0)
        self._overcommitted = overcommitted if overcommitted.any() else None
        self._outside: frozenset[int] = frozenset(np.flatnonzero(overcommitted).tolist())
        """The overcommitted nodes: not in the sorted order (they fit no pod, so none is placed there)."""
        count = len(usable)
        zero = np.zeros(count, dtype=np.int64)
        gpu, cpu = self.columns.get(res.GPU), self.columns.get(res.CPU)
        self._gpu = self._table[gpu] if gpu is not None else zero
        self._cpu = self._table[cpu] if cpu is not None else zero
        """The room nodes are ordered by (views of ``free``; zero for a resource no node has)."""
        self._rank: NDArray[np.int64] | None = None
        """Per node, its GPU room then its cpu room packed into one number of the same order, so
        that one argmin picks the first node of the least; None when room is too large to pack.
        Brought up to date with the room by :meth:`_sync`, as the table is."""
        self._ranks: list[int] | None = None
        """``_rank`` as Python ints, always up to date (the sorted order's key per node)."""
        self._gpu_row = self._rows[gpu] if gpu is not None else [0] * count
        self._cpu_row = self._rows[cpu] if cpu is not None else [0] * count
        self._gpu_column, self._cpu_column = gpu, cpu
        self._gpu_levels: dict[int, int] = {}
        """How many nodes have each positive GPU room (overcommitted nodes too: a pod that does not ask
        for their overcommitted resource may still land there)."""
        for left in self._gpu_row:
            if left > 0:
                self._gpu_levels[left] = self._gpu_levels.get(left, 0) + 1
        self._gpu_most = max(self._gpu_levels, default=0)
        """The most GPU room any node has: a pod asking for more fits nowhere."""
        if count and int(np.abs(self._gpu).max()) < _SPAN and int(np.abs(self._cpu).max()) < _SPAN:
            self._rank = self._gpu * (2 * _SPAN) + self._cpu
        self._count = max(count, 1)
        self._sorted: list[int] | None = None
        """The nodes a pod may land on (none overcommitted: such a node fits no pod), each as
        ``rank * count + node``, ascending: the argmin's order, kept as the room changes."""
        if self._rank is not None:
            ranks = self._ranks = self._rank.tolist()
            self._sorted = sorted(ranks[row] * self._count + row for row in np.flatnonzero(~overcommitted).tolist())
        self.eligible: dict[predicates.EligibilityKey, NDArray[np.bool_]] = {}
        self._eligible_lists: dict[predicates.EligibilityKey, list[bool]] = {}
        # Room only shrinks during a pass (what a refused gang took is given back at once): a pod
        # shape that fitted no node once never will.
        self.hopeless: set[_ShapeKey] = set()
        self._requests: dict[tuple[tuple[str, int], ...], _Request] = {}
        self._arrays: dict[tuple[tuple[int, int], ...], NDArray[np.int64]] = {}
        self._pods: dict[int, _PodInfo] = {}
        self._by_requests: dict[int, tuple[res.Resources, tuple[tuple[str, int], ...], _Request | None]] = {}

    @property
    def free(self) -> NDArray[np.int64]:
        """Per resource (row) and node (column): the free room, one contiguous row per resource so a
        test over all nodes reads only the resources a pod asks for."""
        self._sync()
        return self._table

    def _sync(self) -> None:
        """The table and the packed ranks brought up to date with the lists, on the nodes that changed
        since (one write per changed node, not one per pod placed)."""
        if not self._stale:
            return
        nodes = sorted(self._stale)
        self._stale.clear()
        self._table[:, nodes] = [[row[node] for node in nodes] for row in self._rows]
        if self._rank is not None and self._ranks is not None:
            ranks = self._ranks
            self._rank[nodes] = [ranks[node] for node in nodes]

    def _eligible(self, key: predicates.EligibilityKey) -> NDArray[np.bool_]:
        rows = self.eligible.get(key)
        if rows is None:
            rows = bits(self.index.mask(key), len(self.index.nodes))
            if self._usable is not None:
                rows = rows[self._usable]
            self.eligible[key] = rows
        return rows

    def _pod(self, pod: Pod) -> _PodInfo:
        """The pod's order in its gang, its shape and request vector (None: a resource no node has)."""
        found = self._pods.get(id(pod))
        if found is not None and found[0] is pod:
            return found
        requests = pod.requests
        # Pods of one spec share their requests dict (the converter reads each spec once): its
        # sorted items and vector are looked up once per dict. The entry holds the dict, so its id
        # is not reused while it lives.
        known = self._by_requests.get(id(requests))
        if known is not None and known[0] is requests:
            asked, vector = known[1], known[2]
        else:
            asked, vector = self._request(requests)
            self._by_requests[id(requests)] = (requests, asked, vector)
        order = (-requests.get(res.GPU, 0), -requests.get(res.CPU, 0), pod.key)
        found = (pod, order, (self.keys.of(pod), asked), vector)
        self._pods[id(pod)] = found
        return found

    def _request(self, requests: res.Resources) -> tuple[tuple[tuple[str, int], ...], _Request | None]:
        """A requests dict's sorted items and its :data:`_Request` (None: a resource no node has)."""
        asked = tuple(sorted(requests.items()))
        vector = self._requests.get(asked)
        if vector is None and all(a <= 0 or r in self.columns for r, a in asked):
            # Ascending columns, as the vector's nonzero entries listed them: the columns number the
            # resources in name order, the order ``asked`` is in.
            pairs = tuple((self.columns[name], amount) for name, amount in asked if amount > 0)
            amounts = dict(pairs)
            gpu, cpu = self._gpu_column, self._cpu_column
            vector = self._requests[asked] = (
                [column for column, _ in pairs],
                pairs,
                amounts.get(gpu, 0) if gpu is not None else 0,
                amounts.get(cpu, 0) if cpu is not None else 0,
                tuple((self._rows[column], amount) for column, amount in pairs),
            )
        return asked, vector

    def _array(self, vector: _Request) -> NDArray[np.int64]:
        """The request as a vector over all columns (zero where it asks for nothing), made once."""
        pairs = vector[1]
        request = self._arrays.get(pairs)
        if request is None:
            request = np.zeros(len(self.columns), dtype=np.int64)
            for column, amount in pairs:
                request[column] = amount
            request.flags.writeable = False
            self._arrays[pairs] = request
        return request

    def _best(self, key: predicates.EligibilityKey, vector: _Request) -> int:
        """The first node in preference order that passes the key's predicates and has room for the
        request, or -1."""
        if self._sorted is not None:
            on_list = self._eligible_lists.get(key)
            if on_list is None:
                on_list = self._eligible_lists[key] = self._eligible(key).tolist()
            row = self._first(on_list, vector)
            if row is not None:
                return row
        self._sync()
        on, request, asked = self._eligible(key), self._array(vector), vector[0]
        fits = on
        table = self._table
        for column in asked:
            fits = fits & (table[column] >= request[column])
        if self._overcommitted is not None:
            fits = fits & (~self._overcommitted | np.all(table >= request[:, None], axis=0))
        if self._rank is None:
            rows = np.flatnonzero(fits)
            for left in (self._gpu, self._cpu):
                if rows.size > 1:
                    room = left[rows]
                    rows = rows[room == room.min()]
            return int(rows[0]) if rows.size else -1
        ranked = np.where(fits, self._rank, _LAST)
        row = int(np.argmin(ranked))
        return row if ranked[row] != _LAST else -1

    def _first(self, on: list[bool], vector: _Request) -> int | None:
        """``_best`` by the sorted order: the answer (-1: no node), or None after ``_SCAN`` misses.

        A node of GPU room ``g`` and cpu room ``c`` sorts at ``(g * 2 * _SPAN + c) * count + node``;
        the search starts at the pod's GPU count and cpu request, and on reaching a GPU level's nodes
        with too little cpu jumps to that level's first node with enough."""
        order, count, span = self._sorted, self._count, 2 * _SPAN
        assert order is not None
        _, _, want_gpu, want_cpu, checks = vector
        position = bisect_left(order, (want_gpu * span + want_cpu) * count)
        misses = 0
        while position < len(order):
            rank, row = divmod(order[position], count)
            level = rank // span
            if rank - level * span < want_cpu:
                position = bisect_left(order, (level * span + want_cpu) * count, position)
                continue
            if on[row]:
                # A plain loop, not all() over a generator: this test runs per candidate per pod.
                for room, amount in checks:
                    if room[row] < amount:
                        break
                else:
                    return row
            misses += 1
            if misses > _SCAN:
                return None
            position += 1
        return -1

    def _give(self, row: int, pairs: tuple[tuple[int, int], ...], sign: int) -> None:
        """``sign`` (1 or -1) times the request's ``pairs`` (column, amount) added to the node's room."""
        rows = self._rows
        gpu_row = self._gpu_row
        gpu_before = gpu_row[row]
        for column, amount in pairs:
            rows[column][row] += sign * amount
        self._stale.add(row)
        gpu_after = gpu_row[row]
        if gpu_after != gpu_before:
            self._gpu_level(gpu_before, gpu_after)
        ranks = self._ranks
        if ranks is None:
            return
        before = ranks[row]
        after = gpu_after * (2 * _SPAN) + self._cpu_row[row]
        if after == before:
            return  # a pod that asks for neither GPU nor cpu: the node keeps its place
        ranks[row] = after
        order = self._sorted
        if order is None or row in self._outside:
            return  # an overcommitted node is not in the order (it fits no pod: nothing is taken from it)
        del order[bisect_left(order, before * self._count + row)]
        insort(order, after * self._count + row)

    def _gpu_level(self, before: int, after: int) -> None:
        """A node's GPU room went from ``before`` to ``after``: the counts per GPU room follow."""
        levels = self._gpu_levels
        if before > 0:
            left = levels[before] - 1
            if left:
                levels[before] = left
            else:
                del levels[before]
                if before == self._gpu_most:
                    self._gpu_most = max(levels, default=0)
        if after > 0:
            levels[after] = levels.get(after, 0) + 1
            if after > self._gpu_most:
                self._gpu_most = after

    def refuses_outright(self, gang: Sequence[Pod] | None) -> bool:
        """Whether :meth:`take` refuses the gang without a search: it has a pod asking for GPU shares,
        or for more whole GPUs than any node has left. Room only shrinks during a pass, so such a gang
        is refused after any later takes too (admission places the admitted gangs lazily on that)."""
        if not gang:
            return False
        most = 0
        for pod in gang:
            requests = pod.requests
            if requests.get(res.GPU_MILLI, 0) > 0:
                return True  # GPU shares: packed on single devices by the model, not here
            gpus = requests.get(res.GPU, 0)
            if gpus > most:
                most = gpus
        # No node has that much GPU room left (once the GPUs are all taken, every later gang that
        # asks for one): refused without a search, as the search would refuse it.
        return most > self._gpu_most

    @staticmethod
    def most_gpus(gang: Sequence[Pod]) -> int:
        """The most whole GPUs one of the gang's pods asks for (0 for none)."""
        return max((pod.requests.get(res.GPU, 0) for pod in gang), default=0)

    @property
    def gpu_most(self) -> int:
        """The most GPU room any node has left: a gang with a pod asking for more is refused outright."""
        return self._gpu_most

    def take(self, gang: Sequence[Pod] | None) -> bool:
        """Place the gang's pods on the room if all fit (then the room is theirs), else leave it."""
        if not gang:
            return gang is not None  # nothing to place
        if self.refuses_outright(gang):
            return False
        taken: list[tuple[int, tuple[tuple[int, int], ...]]] = []
        pods = [self._pod(gang[0])] if len(gang) == 1 else sorted((self._pod(p) for p in gang), key=lambda f: f[1])
        for _, _, shape, vector in pods:
            row = -1
            if vector is not None and shape not in self.hopeless:
                row = self._best(shape[0], vector)
            if row < 0:
                if not taken:
                    self.hopeless.add(shape)
                for back, given in taken:  # the gang does not fit: give back what it took
                    self._give(back, given, 1)
                return False
            assert vector is not None
            self._give(row, vector[1], -1)
            taken.append((row, vector[1]))
        return True
