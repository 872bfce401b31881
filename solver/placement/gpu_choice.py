"""Which GPU indices each pod gets on a node: the best-connected sets, chosen jointly.

The CP-SAT model decides how many GPUs of a node each pod takes; the decode then names the
indices. A multi-GPU pod runs at its slowest link, so the indices matter: on a DGX-1 a 4-GPU pod
belongs on a fully NVLinked quad and a 2-GPU pod on an NV2 pair. Choosing pod by pod is not
enough: two 2-GPU pods can each get a good pair and still leave the node's last four GPUs
scattered over both sockets. So all pods landing on a node in one cycle are chosen together.

What "best" means, compared lexicographically (every term is exact, no weights):

1. pods by GPU count, biggest first (ties in the given order); for each, the set's bottleneck
   (the slowest pair inside it), then the sum of its pair bandwidths;
2. then the GPUs left free, for later pods: for every size k from all of them down to 2, the best
   bottleneck and sum a k-subset of them still offers (bigger future pods first: they are the
   ones a scattered remainder hurts).

Among equal answers the lexicographically smallest index sets win, so the choice is
deterministic. The search is exact (dynamic programming over subsets of the free GPUs, pruned by
term 1) up to :data:`EXACT_MAX_FREE` free GPUs, which covers every 8-GPU machine; beyond that a
greedy growth is used, unless all free GPUs are equally connected, where the lowest indices are
exactly optimal. Results are cached by (topology, free set, GPU counts), since the decode asks the
same question for many nodes of a cycle.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations, pairwise

from vcsat.model.gpu_topology import GpuTopology
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.solver.placement.gpu_share import fresh_gpus_needed, place_shares
from vcsat.solver.pricing.fragmentation import share_gpus

EXACT_MAX_FREE = 10
"""Up to this many free GPUs on a node the choice is proven optimal (at most 2^10 subsets)."""

SetKey = tuple[float, float]
"""(bottleneck, sum of pair bandwidths) of one GPU set: larger is better."""


def bottleneck(topology: GpuTopology, indices: Iterable[int]) -> float:
    """GB/s of the slowest pair among these GPUs; ``inf`` for fewer than two (no pair to wait on)."""
    gpus = _distinct(topology, indices)
    return min(
        (topology.bandwidth(a, b) for a, b in combinations(gpus, 2)),
        default=math.inf,
    )


def total_bandwidth(topology: GpuTopology, indices: Iterable[int]) -> float:
    """Sum of the pair bandwidths among these GPUs (the secondary measure of a set)."""
    gpus = _distinct(topology, indices)
    return sum(topology.bandwidth(a, b) for a, b in combinations(gpus, 2))


def choose_gpus(topology: GpuTopology, free: Iterable[int], counts: Sequence[int]) -> list[tuple[int, ...]]:
    """Per pod (its whole-GPU count in ``counts``), the sorted GPU indices it gets, in the same order.

    ``free`` are the node's GPUs no pod holds and no share occupies. ``ValueError`` when the
    pods ask more than is free, or an index is not a GPU of the topology.
    """
    free_sorted = _distinct(topology, free)
    for position, count in enumerate(counts):
        if count < 0:
            raise ValueError(f"pod {position}: GPU count must not be negative, not {count}")
    asked = sum(counts)
    if asked > len(free_sorted):
        raise ValueError(f"pods ask {asked} GPU(s) but only {len(free_sorted)} are free: {list(free_sorted)}")
    order = sorted((i for i in range(len(counts)) if counts[i] > 0), key=lambda i: (-counts[i], i))
    chosen = _choose(topology, free_sorted, tuple(counts[i] for i in order))
    out: list[tuple[int, ...]] = [() for _ in counts]
    for position, gpus in zip(order, chosen, strict=True):
        out[position] = gpus
    return out


@dataclass(frozen=True)
class NodePlan:
    """Every new GPU placement on one node: whole-GPU pods and GPU shares."""

    whole: tuple[tuple[int, ...], ...]
    """Per whole-GPU pod, its indices (in the order the counts were given)."""
    shares: tuple[int | None, ...]
    """Per share request, its GPU index, or None where no GPU had room."""


def plan_node(
    topology: GpuTopology,
    free: Iterable[int],
    counts: Sequence[int],
    *,
    shares: Sequence[int] = (),
    shared: Mapping[int, int] | None = None,
    fragmentation: Callable[[Sequence[int]], float] | None = None,
) -> NodePlan:
    """Whole-GPU pods and share requests on one node, chosen together.

    ``free``: GPUs with no holder and no shares (``gpu_holdings(...).free_whole(gpus)``, as
    ``Problem.free_gpu_ids``); ``counts``: whole-GPU pods' counts; ``shares``: share requests in
    thousandths; ``shared``: thousandths already in use per GPU holding shares
    (``gpu_holdings(...).share_milli``, see :mod:`vcsat.model.gpus`).
    Shares fill GPUs that hold shares first (best fit); the fresh GPUs they still need are chosen
    with the whole-GPU pods as 1-GPU sets that rank last, so they take the GPUs whose loss leaves
    the rest best connected. With ``fragmentation`` (the node's expected fragmentation as a
    function of each GPU's room left, :mod:`vcsat.solver.pricing.fragmentation`), each share, biggest first,
    goes to the GPU after which it is least instead (GPUs holding shares, then those fresh GPUs,
    then other free ones, on ties), unless that leaves a share without room where best fit has it.
    """
    free_sorted = _distinct(topology, free)
    room = len(free_sorted) - sum(counts)
    fresh = min(fresh_gpus_needed(shares, shared=shared, limit=max(room, 0)), max(room, 0))
    sets = choose_gpus(topology, free_sorted, [*counts, *([1] * fresh)])
    whole = tuple(sets[: len(counts)])
    opened = [gpus[0] for gpus in sets[len(counts) :]]
    if fragmentation is not None and shares:
        taken = {gpu for gpus in whole for gpu in gpus}
        lefts = [0] * topology.gpu_count
        for gpu in free_sorted:
            lefts[gpu] = FULL_GPU_MILLI
        in_use = {gpu: milli for gpu, milli in (shared or {}).items() if milli > 0}
        for gpu, milli in in_use.items():
            lefts[gpu] = FULL_GPU_MILLI - milli
        others = [gpu for gpu in free_sorted if gpu not in taken and gpu not in opened]
        candidates = [*sorted(in_use), *opened, *others]
        for gpu in taken:
            lefts[gpu] = 0
        chosen = share_gpus(fragmentation, shares, lefts, candidates)
        if all(gpu is not None for gpu in chosen):
            return NodePlan(whole=whole, shares=tuple(chosen))
    placed = place_shares(shares, shared=shared, free=opened)
    return NodePlan(whole=whole, shares=tuple(placed))


def _distinct(topology: GpuTopology, indices: Iterable[int]) -> tuple[int, ...]:
    gpus = tuple(sorted(indices))
    for a, b in pairwise(gpus):
        if a == b:
            raise ValueError(f"GPU {a} listed twice")
    if gpus and (gpus[0] < 0 or gpus[-1] >= topology.gpu_count):
        bad = [g for g in gpus if not 0 <= g < topology.gpu_count]
        raise ValueError(f"GPU index {bad[0]} is not among the node's {topology.gpu_count} GPUs")
    return gpus


@lru_cache(maxsize=16384)
def _choose(topology: GpuTopology, free: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Index sets for pods of ``sizes`` (biggest first) out of ``free``; see the module docstring."""
    if not sizes:
        return ()
    if _equally_connected(topology, free):
        return _lowest_first(free, sizes)
    if len(free) <= EXACT_MAX_FREE:
        return _ExactSearch(topology, free, sizes).solve()
    return _greedy(topology, free, sizes)


def _equally_connected(topology: GpuTopology, free: tuple[int, ...]) -> bool:
    values = {topology.bandwidth(a, b) for a, b in combinations(free, 2)}
    return len(values) <= 1


def _lowest_first(free: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    out: list[tuple[int, ...]] = []
    start = 0
    for size in sizes:
        out.append(free[start : start + size])
        start += size
    return tuple(out)


class _ExactSearch:
    """Lexicographic optimum by dynamic programming over bitmasks of the free GPUs.

    Bit ``i`` stands for ``free[i]``; since ``free`` is sorted, combinations of bits come in
    lexicographic order of GPU indices, and keeping the first of equal candidates keeps the
    smallest sets.
    """

    def __init__(self, topology: GpuTopology, free: tuple[int, ...], sizes: tuple[int, ...]) -> None:
        self.free = free
        self.sizes = sizes
        self.width = [[topology.bandwidth(a, b) for b in free] for a in free]
        self._keys: dict[int, SetKey] = {}
        self._quality: dict[int, tuple[SetKey, ...]] = {}
        self._best: dict[tuple[int, int], tuple[tuple[SetKey, ...], tuple[int, ...]]] = {}

    def solve(self) -> tuple[tuple[int, ...], ...]:
        _, masks = self._solve(0, (1 << len(self.free)) - 1)
        return tuple(tuple(self.free[b] for b in _bits(mask)) for mask in masks)

    def key(self, mask: int) -> SetKey:
        """(bottleneck, sum) of a set, built from the set without its lowest GPU."""
        known = self._keys.get(mask)
        if known is not None:
            return known
        low = mask & -mask
        rest = mask ^ low
        if rest == 0:
            result: SetKey = (math.inf, 0.0)
        else:
            slowest, total = self.key(rest)
            row = self.width[low.bit_length() - 1]
            for b in _bits(rest):
                slowest = min(slowest, row[b])
                total += row[b]
            result = (slowest, total)
        self._keys[mask] = result
        return result

    def _rounded(self, mask: int) -> SetKey:
        slowest, total = self.key(mask)
        return (slowest, round(total, 6))  # sums in different orders must still tie

    def quality(self, remaining: int) -> tuple[SetKey, ...]:
        """Per size k from all remaining GPUs down to 2, the best k-subset's (bottleneck, sum)."""
        known = self._quality.get(remaining)
        if known is not None:
            return known
        size = remaining.bit_count()
        best: dict[int, SetKey] = {}
        sub = remaining
        while sub:
            k = sub.bit_count()
            if k >= 2:
                key = self._rounded(sub)
                if k not in best or key > best[k]:
                    best[k] = key
            sub = (sub - 1) & remaining
        result = tuple(best[k] for k in range(size, 1, -1))
        self._quality[remaining] = result
        return result

    def _solve(self, pod: int, remaining: int) -> tuple[tuple[SetKey, ...], tuple[int, ...]]:
        """Best (value vector, masks) for pods ``pod..`` out of ``remaining``."""
        if pod == len(self.sizes):
            return self.quality(remaining), ()
        memo = self._best.get((pod, remaining))
        if memo is not None:
            return memo
        # Term 1 first: only candidates with this pod's best own key can be optimal.
        top: SetKey | None = None
        candidates: list[int] = []
        for combo in combinations(_bits(remaining), self.sizes[pod]):
            mask = sum(1 << b for b in combo)
            key = self._rounded(mask)
            if top is None or key > top:
                top, candidates = key, [mask]
            elif key == top:
                candidates.append(mask)
        assert top is not None, "the caller checked that the pods fit"
        best: tuple[tuple[SetKey, ...], tuple[int, ...]] | None = None
        for mask in candidates:
            later, masks = self._solve(pod + 1, remaining & ~mask)
            if best is None or later > best[0]:
                best = (later, (mask, *masks))
        assert best is not None
        result = ((top, *best[0]), best[1])
        self._best[(pod, remaining)] = result
        return result


def _bits(mask: int) -> list[int]:
    out: list[int] = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _greedy(topology: GpuTopology, free: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Beyond exact reach: each pod (biggest first) grows its set from its best pair.

    A 1-GPU pod takes the GPU least connected to the others, which leaves the rest best knit.
    Deterministic; not proven optimal.
    """
    remaining = list(free)
    out: list[tuple[int, ...]] = []
    for size in sizes:
        if size == 1:
            pick = min(
                remaining,
                key=lambda g: (sum(topology.bandwidth(g, o) for o in remaining if o != g), g),
            )
            chosen = [pick]
        else:
            pair = max(
                combinations(remaining, 2),
                key=lambda p: (topology.bandwidth(*p), [-g for g in p]),
            )
            chosen = list(pair)
            while len(chosen) < size:
                options = [g for g in remaining if g not in chosen]
                chosen.append(
                    max(
                        options,
                        key=lambda g: (
                            bottleneck(topology, [*chosen, g]),
                            total_bandwidth(topology, [*chosen, g]),
                            -g,
                        ),
                    )
                )
        out.append(tuple(sorted(chosen)))
        remaining = [g for g in remaining if g not in chosen]
    return tuple(out)
