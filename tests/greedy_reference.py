"""The greedy's free room as it was before it was indexed: every query a scan over nodes.

Kept in the tests only, as the reference the indexed :class:`vcsat.solver.greedy.Room` must agree
with, query for query and decision for decision (tests/test_greedy_index.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.solver.pricing import scarcity
from vcsat.solver.pricing.fragmentation import greedy_chooser
from vcsat.solver.problem import Domains, Gang, Problem, Shape
from vcsat.solver.rules.attach import AttachTracker
from vcsat.solver.rules.interpod_tracker import Tracker
from vcsat.solver.rules.spread import SpreadState

Allow = Callable[[int], bool]


class ScanRoom:
    """Free room per node, with nodes bucketed by free GPUs so best fit is found without a scan.

    GPU shares are placed exactly: onto the shared GPU they fit best, else onto a fresh GPU,
    which whole-GPU pods then no longer get (contract §1)."""

    def __init__(self, problem: Problem, memos: object = None) -> None:
        """``memos``: what the greedy hands its rooms to share with the problem's other fill
        (:class:`vcsat.solver.greedy.FillMemos`); the scan learns everything afresh, so it stays
        the reference for rooms that share them."""
        self.free = [list(row) for row in problem.free]
        self.gpu = problem.resources.index(res.GPU) if res.GPU in problem.resources else None
        self.milli = problem.resources.index(res.GPU_MILLI) if res.GPU_MILLI in problem.resources else None
        self.whole = [len(ids) for ids in problem.free_gpu_ids]
        self.shared = [dict(used) for used in problem.shared_milli]
        self.opened: list[list[tuple[int, bool]]] = [[] for _ in problem.free]
        """Per node, the shares placed: (GPU, whether it was opened for them), newest last."""
        self.levels: dict[int, dict[int, None]] = {}
        for node, row in enumerate(self.free):
            self.levels.setdefault(self._level(row), {})[node] = None
        self.touched: set[int] = set()
        """Nodes changed since :meth:`free_gpus_in` last looked."""
        self.domain_sums: dict[tuple[int, str], int] = {}
        self.topology_gangs = problem.topology_gangs
        self.domains = problem.domains
        self.keep_whole = False
        """As :attr:`vcsat.solver.greedy.Room.keep_whole` (the fill keeping whole nodes sets it)."""
        self.spread = SpreadState(problem.spread) if problem.spread else None
        """Topology spread counts of what is placed so far (None without spread constraints)."""
        self.interpod = Tracker(problem, problem.interpod) if problem.interpod is not None else None
        """Rules between pods, pod by pod (None when no class is isolated)."""
        self.attach = (
            AttachTracker(problem.attach, [shape.volumes for shape in problem.shapes])
            if problem.attach is not None
            else None
        )
        """Shared CSI volumes placed so far, per node (None when no pod shares one)."""
        self.full: set[object] = set()
        """Never filled: the reference remembers no empty query, it scans every time."""
        self.gang_sizes: dict[int, tuple[int, int]] = {}
        self.class_plans: dict[int, list[object]] = {}
        self.plain_keys: dict[int, tuple[object, ...]] = {}
        self.kept = None
        self.packing: dict[int, tuple[int, bool, float, str]] = {}
        self.gang_asks: dict[tuple[int, str], int] = {}
        self.caps_of: dict[str, list[str]] = {}
        self.shape_asks: dict[int, dict[str, int]] = {}
        self.shape_queries: dict[int, object] = {}

    def query_key(self, request: tuple[int, ...], eligible: dict[int, int], within: list[int] | None) -> object:
        return None

    def note_full(self, key: object) -> None:
        pass

    def open_trial(self) -> None:
        pass

    def close_trial(self, kept: bool) -> None:
        pass

    def holder(self, problem: Problem, gang: Gang) -> None:
        """Never judges a trial from counts: the reference makes every one."""
        return None

    def choosers(self, problem: Problem) -> tuple[object, scarcity.Scarcity | None]:
        return greedy_chooser(problem), scarcity.for_problem(problem)

    def priced(self, problem: Problem, scarce: scarcity.Scarcity, shape: Shape) -> bool:
        return scarce.applies(shape.eligibility, scarcity.shape_milli(problem, shape) > 0)

    def _level(self, row: list[int]) -> int:
        return max(0, row[self.gpu]) if self.gpu is not None else 0

    def cheapest_fit(
        self, scarce: scarcity.Scarcity, shape: Shape, allow: Callable[[int], bool] | None = None
    ) -> int | None:
        return scarcity.cheapest_fit(scarce, self, shape, allow)  # type: ignore[arg-type]

    def _parts(self, request: tuple[int, ...]) -> tuple[int, int]:
        """(whole GPUs, share thousandths) of a request."""
        whole = request[self.gpu] if self.gpu is not None else 0
        share = request[self.milli] - FULL_GPU_MILLI * whole if self.milli is not None else 0
        return whole, share

    def _shift(self, node: int, change: list[int]) -> None:
        self.touched.add(node)
        row = self.free[node]
        before = self._level(row)
        for i, amount in enumerate(change):
            row[i] += amount
        after = self._level(row)
        if after != before:
            del self.levels[before][node]
            self.levels.setdefault(after, {})[node] = None

    def attach_slots(self, node: int, slots: dict[int, int]) -> None:
        """Shared CSI volumes' attach slots taken on the node (negative: given back), per resource."""
        change = [0] * len(self.free[node])
        for r, count in slots.items():
            change[r] = -count
        self._shift(node, change)

    def take(self, node: int, request: tuple[int, ...]) -> None:
        whole, share = self._parts(request)
        change = [-amount for amount in request]
        self.whole[node] -= whole
        if share > 0:
            fits = [
                (FULL_GPU_MILLI - used, gpu)
                for gpu, used in self.shared[node].items()
                if used + share <= FULL_GPU_MILLI
            ]
            if fits:
                gpu = min(fits)[1]
                self.opened[node].append((gpu, False))
            else:
                gpu = max([*self.shared[node], -1]) + 1 + len(self.opened[node])  # a fresh one
                self.whole[node] -= 1
                if self.gpu is not None:
                    change[self.gpu] -= 1
                self.opened[node].append((gpu, True))
            self.shared[node][gpu] = self.shared[node].get(gpu, 0) + share
        self._shift(node, change)

    def give(self, node: int, request: tuple[int, ...]) -> None:
        """Undo the newest ``take`` of this request on this node."""
        whole, share = self._parts(request)
        change = list(request)
        self.whole[node] += whole
        if share > 0:
            gpu, opened = self.opened[node].pop()
            self.shared[node][gpu] -= share
            if opened:
                del self.shared[node][gpu]
                self.whole[node] += 1
                if self.gpu is not None:
                    change[self.gpu] += 1
        self._shift(node, change)

    def fits(self, node: int, request: tuple[int, ...]) -> bool:
        if not all(amount <= room for amount, room in zip(request, self.free[node], strict=True)):
            return False
        whole, share = self._parts(request)
        if whole > self.whole[node]:
            return False
        if share <= 0:
            return True
        if any(used + share <= FULL_GPU_MILLI for used in self.shared[node].values()):
            return True
        return self.whole[node] - whole >= 1

    def free_total(self, r: int) -> int:
        return sum(max(0, row[r]) for row in self.free if min(row, default=0) >= 0)

    def free_gpus_in(self, domains: Domains, tier: int, name: str) -> int:
        """Free whole GPUs in a topology domain: sums kept per domain and redone only where nodes
        changed (summing every domain for every gang is quadratic at 5,000 nodes)."""
        if self.touched:
            for node in self.touched:
                for t, domain in domains.of_node[node].items():
                    self.domain_sums.pop((t, domain), None)
            self.touched.clear()
        total = self.domain_sums.get((tier, name))
        if total is None:
            total = sum(max(0, self.whole[n]) for n in domains.nodes_in(tier, name))
            self.domain_sums[(tier, name)] = total
        return total

    def roomy_domains(self, domains: Domains, tier: int, needed: int) -> list[list[int]]:
        inside = []
        for name in domains.domains(tier):
            nodes = domains.nodes_in(tier, name)
            free = self.free_gpus_in(domains, tier, name)
            if name and free >= needed:
                inside.append((free, name, nodes))
        return [nodes for _, _, nodes in sorted(inside)]

    def roomy(self, tier: int, needed: int) -> np.ndarray:
        """:meth:`roomy_domains` as positions among the tier's named domains in name order."""
        domains = self.domains
        if domains is None:
            return np.zeros(0, dtype=np.int64)
        names = [name for name in domains.domains(tier) if name]
        inside = [(self.free_gpus_in(domains, tier, name), name, i) for i, name in enumerate(names)]
        return np.array([i for free, _, i in sorted(inside) if free >= needed], dtype=np.int64)

    def domain_lists(self, tier: int, positions: np.ndarray) -> list[list[int]]:
        assert self.domains is not None
        names = [name for name in self.domains.domains(tier) if name]
        return [self.domains.nodes_in(tier, names[i]) for i in positions.tolist()]

    def fullest_with(self, gpus: int) -> int | None:
        """A node with at least ``gpus`` free GPUs and the fewest such (lowest index on ties)."""
        for level in sorted(lvl for lvl in self.levels if lvl >= gpus):
            nodes = [n for n in self.levels[level] if self.whole[n] >= gpus]
            if nodes:
                return min(nodes)
        return None

    def best_fit_in(
        self, request: tuple[int, ...], eligible: dict[int, int], nodes: list[int], allow: Allow | None = None
    ) -> int | None:
        """Best fit among the given nodes only (a topology domain): fewest free GPUs, then index."""
        fitting = [n for n in nodes if n in eligible and self.fits(n, request) and (allow is None or allow(n))]
        return min(fitting, key=lambda n: (self._level(self.free[n]), n)) if fitting else None

    def preferred_fit(self, shape: Shape, allow: Allow | None = None) -> int | None:
        """The node a pod with node preferences goes to: the highest preference score among those
        it fits (kube-scheduler's choice), then best fit (fewest free GPUs), then node order."""
        fitting = [n for n in shape.upper if self.fits(n, shape.request) and (allow is None or allow(n))]
        if not fitting:
            return None
        return min(fitting, key=lambda n: (-shape.preference.get(n, 0), self._level(self.free[n]), n))

    def best_fit(
        self, request: tuple[int, ...], gpus: int, eligible: dict[int, int], allow: Allow | None = None
    ) -> int | None:
        for level in sorted(lvl for lvl in self.levels if lvl >= gpus):
            for node in self.levels[level]:
                if node in eligible and self.fits(node, request) and (allow is None or allow(node)):
                    return node
        return None
