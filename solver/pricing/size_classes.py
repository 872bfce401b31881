"""Size classes: the price of breaking the last nodes big enough for a kind of pod already seen.

Why it exists: the pools of :mod:`vcsat.solver.pricing.scarcity` are learnt from the pods' node
rules and GPU counts, and :mod:`vcsat.solver.pricing.rarity` keeps the types the cluster has few
of. Neither sees a pod confined by its *size*: one asking 8 GPUs, 120 cores and 720 GiB runs on an
8-GPU node of 128 cores and 768 GiB and on no 8-GPU node of 96 cores, whatever its node rules say.
On the openb cluster such nodes are 3% of the GPU nodes (too many to be rare), and small pods that
could run on any 8-GPU node took the last of them whole: a small pod's cores are a smaller share of
a roomy node, so the pools' price (room taken: the node's free GPUs times the share of its free
cores taken) made the roomy node the cheaper one, and the big pod that came next found none.

The measure, per cycle, from the pods seen (bound and pending, as the pools' demand is) and the
nodes:

- A pod asking GPUs is **confined by its size** when its GPUs, cores and memory fit the allocatable
  room of at most half (:data:`CONFINED_SHARE`) of the GPU nodes with enough GPUs for it. A GPU
  count alone confines nothing here (the pools price that), and a pod that misses only a few small
  nodes is not confined (a price on most nodes of the cluster would only reorder them). Its
  **class** is the set of nodes it fits; pods fitting the same nodes are one class. A class whose
  nodes are all of rare types is left to the rarity price.
- A node is **free for a class** while it is ready and one pod of the class seen fits its free
  room now. With ``k`` of its nodes free for it, taking room on one costs ``1 / k`` per GPU
  thousandth (as a rare type expects one pod of its own, a class seen expects one more): cheap
  while many are free, the price of a full pool on the last one. A node no longer free for the
  class costs nothing more: packing onto it keeps the others free for it.
- Who pays: a pod that may run on GPU nodes outside the class's nodes; a pod whose eligible GPU
  nodes all belong to the class is its own work and pays nothing for it. Rates of several classes
  and of the pools and rare types combine with :func:`vcsat.solver.pricing.rarity.either`, so a
  rate stays a share of a thousandth in [0, 1], priced below placed work like the others.

It is part of the pools' measure and exists only when pools do: a workload with no confined pod is
decided as without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from vcsat.model import resources as res
from vcsat.solver.pricing.node_masks import mask_of
from vcsat.solver.pricing.rarity import either

CONFINED_SHARE = 0.5
"""A pod is confined by its size when it fits at most this share of the GPU nodes with enough GPUs
for it: most of those nodes cannot take it (chosen before any run; on the openb cluster the pods
seen fit either 89-100% of those nodes or 6%, the 8-GPU pods of 120 cores)."""

PodSize = tuple[int, int, int, int]
"""What a pod asks that decides which nodes it fits: whole GPUs, GPU thousandths of a share, cores
(milli) and memory (bytes)."""


def pod_size(gpus: int, gpu_milli: int, requests: Mapping[str, int]) -> PodSize:
    """The size of a pod asking ``gpus`` whole GPUs or a share of ``gpu_milli``, and ``requests``."""
    return (gpus, gpu_milli, requests.get(res.CPU, 0), requests.get(res.MEMORY, 0))


@dataclass(frozen=True)
class NodeRoom:
    """Per node, as arrays: what it holds (allocatable) and what is free of it now."""

    gpus: NDArray[np.int64]
    cpu: NDArray[np.int64]
    memory: NDArray[np.int64]
    free_gpus: NDArray[np.int64]
    """Whole GPUs nobody holds."""
    free_milli: NDArray[np.int64]
    """GPU thousandths nobody holds (whole GPUs and what shares leave)."""
    free_cpu: NDArray[np.int64] | None
    free_memory: NDArray[np.int64] | None
    """None when not known (no pending pod asks it: nothing placed this cycle takes it)."""
    ready: NDArray[np.bool_]


@dataclass(frozen=True)
class SizeClasses:
    """Per cycle: the size classes seen, the nodes free for each and the rate of each."""

    members: tuple[int, ...]
    """Per class, every node it fits, as a bit mask (the test of whether a pod is its own work)."""
    free: tuple[NDArray[np.bool_], ...]
    """Per class, per node: whether it is free for the class (see the module docstring)."""
    rate_of: tuple[float, ...]
    """Per class, ``1 / k`` with ``k`` its nodes free for it."""
    _tags: list[tuple[int, ...]] = field(default_factory=list, compare=False, repr=False)

    def own(self, eligible: int, kind: int) -> bool:
        """Whether pods eligible on the GPU nodes ``eligible`` (a bit mask) may run on no GPU node
        but class ``kind``'s: its own work, which pays nothing for it."""
        return eligible & ~self.members[kind] == 0

    def rate(self, node: int, eligible: int) -> float:
        """The classes' rate on ``node`` for pods eligible on the GPU nodes ``eligible``."""
        rate = 0.0
        for kind, free in enumerate(self.free):
            if free[node] and not self.own(eligible, kind):
                rate = either(rate, self.rate_of[kind])
        return rate

    def rates(self, eligible: int) -> NDArray[np.float64]:
        """:meth:`rate` on every node, as an array (the same operations, so the same floats: a
        class not free on a node adds ``0 * (1 - r)``, which leaves ``r`` as it was)."""
        out: NDArray[np.float64] = np.zeros(len(self.free[0]), dtype=np.float64)
        for kind, free in enumerate(self.free):
            if not self.own(eligible, kind):
                out = either(out, np.where(free, self.rate_of[kind], 0.0))
        return out

    def tag(self, node: int) -> tuple[int, ...]:
        """The classes ``node`` is free for: nodes of different tags are priced apart."""
        if not self._tags:
            self._tags.extend(tuple(k for k, free in enumerate(self.free) if free[n]) for n in range(len(self.free[0])))
        return self._tags[node]


def fits_empty(room: NodeRoom, size: PodSize) -> NDArray[np.bool_]:
    """Per node, whether a pod of ``size`` fits its allocatable room (the node empty)."""
    gpus, _, cpu, memory = size
    fits: NDArray[np.bool_] = (room.gpus >= max(1, gpus)) & (room.cpu >= cpu) & (room.memory >= memory)
    return fits


def fits_now(room: NodeRoom, size: PodSize) -> NDArray[np.bool_]:
    """Per ready node, whether a pod of ``size`` fits its free room now (where free cores or memory
    are not known, its allocatable)."""
    gpus, milli, cpu, memory = size
    gpu_ok = room.free_gpus >= gpus if gpus > 0 else room.free_milli >= milli
    free_cpu = room.cpu if room.free_cpu is None else room.free_cpu
    free_memory = room.memory if room.free_memory is None else room.free_memory
    fits: NDArray[np.bool_] = gpu_ok & (free_cpu >= cpu) & (free_memory >= memory) & room.ready
    return fits


def size_classes(room: NodeRoom, sizes: Sequence[PodSize], rare_nodes: int) -> SizeClasses | None:
    """The size classes of the pods seen of ``sizes`` (see the module docstring), None when no
    class has a node free for it. ``rare_nodes``: the nodes of rare types, as a bit mask."""
    gpu_nodes = room.gpus > 0
    if not gpu_nodes.any():
        return None
    classes: dict[bytes, tuple[NDArray[np.bool_], list[PodSize]]] = {}
    for size in sorted(set(sizes)):
        fits = fits_empty(room, size) & gpu_nodes
        enough_gpus = gpu_nodes & (room.gpus >= max(1, size[0]))
        if not fits.any() or fits.sum() > CONFINED_SHARE * enough_gpus.sum():
            continue  # fits nowhere, or on most nodes its GPU count allows: not confined by its size
        found = classes.setdefault(np.packbits(fits).tobytes(), (fits, []))
        found[1].append(size)
    members: list[int] = []
    free: list[NDArray[np.bool_]] = []
    rate_of: list[float] = []
    for fits, of_class in classes.values():
        mask = mask_of(fits)
        if mask & ~rare_nodes == 0:
            continue  # only rare types: the rarity price keeps them
        free_now = np.zeros(len(room.gpus), dtype=np.bool_)
        for size in of_class:
            free_now |= fits_now(room, size) & fits
        count = int(free_now.sum())
        if count == 0:
            continue
        members.append(mask)
        free.append(free_now)
        rate_of.append(1.0 / count)
    if not members:
        return None
    return SizeClasses(tuple(members), tuple(free), tuple(rate_of))
