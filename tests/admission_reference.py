"""Admission's free room as it was before its test was column-wise: one row per node, every pod
tested against all resources of all nodes. Kept in the tests only, as the reference
``vcsat.solver.enqueue._FreeRoom`` must agree with (tests/test_enqueue_index.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from vcsat.model import Node, Pod, Snapshot
from vcsat.model import resources as res
from vcsat.solver.rules import predicates


class ScanFreeRoom:
    """What each Ready, uncordoned node has free now (allocatable less its bound pods' requests), for
    rule 6: a gang is placed on it greedily, pod by pod (largest first, each on the eligible node it
    leaves least GPU room on, then least cpu), and takes that room only if all its pods fit. A
    heuristic, so it may refuse a gang that some packing would fit (it then waits as Volcano's would);
    it never admits one whose pods fit nowhere. One row per node, so a pod costs a few array
    operations even on thousands of nodes."""

    def __init__(self, snapshot: Snapshot, keys: object = None) -> None:
        usable = [node for node in snapshot.nodes if node.ready and not node.unschedulable]
        self.index = predicates.NodeIndex(usable)
        on_node = snapshot.pods_on_node
        self.columns = {name: i for i, name in enumerate(sorted({r for node in usable for r in node.allocatable}))}
        self.free = np.zeros((len(usable), len(self.columns)), dtype=np.int64)
        for row, node in enumerate(usable):
            free = res.sub(node.allocatable, res.total(p.requests for p in on_node.get(node.name, ())))
            for name, amount in free.items():
                if name in self.columns:
                    self.free[row, self.columns[name]] = amount
        self.eligible: dict[predicates.EligibilityKey, NDArray[np.bool_]] = {}
        # Room only shrinks during a pass: a pod shape that fitted no node once never will.
        self.hopeless: set[tuple[predicates.EligibilityKey, tuple[tuple[str, int], ...]]] = set()

    def _eligible(self, key: predicates.EligibilityKey) -> NDArray[np.bool_]:
        rows = self.eligible.get(key)
        if rows is None:
            mask = self.index.mask(key)
            rows = np.array([bool(mask >> i & 1) for i in range(len(self.index.nodes))], dtype=np.bool_)
            self.eligible[key] = rows
        return rows

    def refuses_outright(self, gang: Sequence[Pod] | None) -> bool:
        """Never: admission on this room places every admitted gang before each gang it tries, as it
        did before it placed them lazily (the verdicts must be the same)."""
        return False

    @staticmethod
    def most_gpus(gang: Sequence[Pod]) -> int:
        """Zero: with :attr:`gpu_most` also zero, the catch-up's test after each take never refuses."""
        return 0

    @property
    def gpu_most(self) -> int:
        """Zero (see :meth:`most_gpus`): this room never refuses outright."""
        return 0

    def take(self, gang: Sequence[Pod] | None) -> bool:
        if not gang or any(p.requests.get(res.GPU_MILLI, 0) > 0 for p in gang):
            # Nothing to place, or GPU shares (packed on single devices by the model, not here).
            return gang is not None and not gang
        gpu, cpu = self.columns.get(res.GPU), self.columns.get(res.CPU)
        taken: list[tuple[int, NDArray[np.int64]]] = []
        for pod in sorted(gang, key=lambda p: (-p.requests.get(res.GPU, 0), -p.requests.get(res.CPU, 0), p.key)):
            key = predicates.eligibility_key(pod)
            shape = (key, tuple(sorted(pod.requests.items())))
            rows = None
            if shape not in self.hopeless and all(a <= 0 or r in self.columns for r, a in pod.requests.items()):
                request = np.zeros(len(self.columns), dtype=np.int64)
                for name, amount in pod.requests.items():
                    if amount > 0:
                        request[self.columns[name]] = amount
                rows = np.flatnonzero(self._eligible(key) & np.all(self.free >= request, axis=1))
            if rows is None or not rows.size:
                if not taken:
                    self.hopeless.add(shape)
                for row, request in taken:  # the gang does not fit: give back what it took
                    self.free[row] += request
                return False
            for column in (gpu, cpu):
                if column is not None and rows.size > 1:
                    left = self.free[rows, column]
                    rows = rows[left == left.min()]
            row = int(rows[0])
            self.free[row] -= request
            taken.append((row, request))
        return True


class ScanPlaceable:
    """Rule 3's static check as it was before it was column-wise: every node copied Ready and
    uncordoned, and each (eligibility key, request) pair tested node by node. Kept in the tests
    only, as the reference ``vcsat.solver.admission_static.Placeable`` must agree with
    (tests/test_admission_static.py)."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        copies = tuple(node.model_copy(update={"ready": True, "unschedulable": False}) for node in nodes)
        self.index = predicates.NodeIndex(copies)
        self._cache: dict[tuple[predicates.EligibilityKey, tuple[tuple[str, int], ...]], bool] = {}

    def could_ever(self, pod: Pod) -> bool:
        if pod.bound:
            return True
        request = {name: amount for name, amount in pod.requests.items() if name != res.GPU_MILLI}
        key = (predicates.eligibility_key(pod), tuple(sorted(request.items())))
        answer = self._cache.get(key)
        if answer is None:
            answer = any(res.fits(request, node.allocatable) for node in self.index.eligible(pod))
            self._cache[key] = answer
        return answer
