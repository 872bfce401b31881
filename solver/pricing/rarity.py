"""Rare node types: the price of taking the last free nodes of a kind the cluster has few of.

Why it exists: :mod:`vcsat.solver.pricing.scarcity` keeps a pool's room for the pods confined to
it, with the demand for each pool learnt from the pods seen (bound and pending) and a prior for
the pools nobody asked for yet. That cannot keep a kind of node for a pod that is the first of its
kind: on the openb cluster at full size the pods lost early were the only pod asking a whole
4-GPU T4 node (17 of 1,213 nodes), the only one asking an A10 (2 nodes) and the only one needing
the single V100 node with 336 GiB; by the time each came, work that fitted anywhere had taken a
piece of every node of its type. Those pods come from the shape of the cluster, not from the pods
seen: a cluster holds a few nodes of a type because some work needs that type.

The measure, from the cluster alone: a **type** is the GPU nodes with the same values of the pool
labels (the labels confined pods select on, a GPU model say), GPU count, allocatable cores and
allocatable memory. A type is **rare** when its nodes are at most :data:`RARE_SHARE` of the GPU
nodes. A rare type is priced as a pool that expects one pod of its own the size of a whole node
(what sets the type apart is what a node of it holds whole): with ``k`` of its ready nodes whose
GPUs are all free, each of those costs ``1 / k`` per GPU thousandth taken, so the price of its
last free node is the price of a full pool (1), and while many are free it is small next to the
pools' pressures. A node of the type already holding GPU work costs nothing more (it no longer
holds the whole-node pod; packing onto it keeps the others whole).

Who pays: a pod that may run on GPU nodes of another type; a pod whose eligible GPU nodes are all
of the rare type is that type's own work and pays nothing for it. The rate is read per cycle from
the cycle's starting state, like the pools' pressures, and combined with them by :func:`either`
(:meth:`vcsat.solver.pricing.scarcity.Scarcity.rate`), so it stays a share of a thousandth in
[0, 1] and, being a price below placed work, never trades a pod of placed work for a node kept.

Why :func:`either` and not the larger of the two: the room taken on a wholly free node of a rare
type is missed in two ways, by its pool's confined work (the pool's pressure ``p``) and by the
whole-node pod of its type (``r``); the chance it is missed by either is ``1 - (1 - p)(1 - r)``.
The larger of the two gave the free rare nodes their pool's price whenever ``p >= r``, and in a
busy pool that holds for all but a type's last few free nodes (``r = 1/k``): small unconfined pods
then spread over the rare nodes as readily as over the common ones of the same pool, and the
type's whole-node pod found none whole. With both counted, a wholly free node of a rare type is
dearer than a node of its pool already in use at every pressure below 1, so work that fits
elsewhere packs there first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from operator import is_
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from vcsat.model import Node
from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI

RARE_SHARE = 0.02
"""A node type with at most this share of the GPU nodes is rare (chosen before any run: the openb
cluster's A10, 4-GPU T4 and 336 GiB V100 types are 0.1-1.4% of its nodes, its big types 3-45%)."""


@dataclass(frozen=True)
class RareTypes:
    """Per cycle: the rare node types, which of their nodes are wholly free, and the rate of each."""

    free_type: tuple[int, ...]
    """Per node, the rare type it is of when its GPUs are all free and it is ready, else -1."""
    members: tuple[int, ...]
    """Per rare type, all its nodes as a bit mask (the test of whether a pod needs the type)."""
    rate_of: tuple[float, ...]
    """Per rare type, ``1 / k`` with ``k`` its wholly free nodes."""

    def own(self, eligible: int, kind: int) -> bool:
        """Whether pods eligible on the GPU nodes ``eligible`` (a bit mask) may run on no GPU node
        but those of rare type ``kind``: its own work, which pays nothing for it."""
        return eligible & ~self.members[kind] == 0

    def rate(self, node: int, eligible: int) -> float:
        """The rare-type rate of ``node`` for pods eligible on the GPU nodes ``eligible``."""
        kind = self.free_type[node]
        if kind < 0 or self.own(eligible, kind):
            return 0.0
        return self.rate_of[kind]

    def rates(self, eligible: int) -> NDArray[np.float64]:
        """:meth:`rate` on every node, as an array (the same floats)."""
        per_type = [0.0 if self.own(eligible, kind) else r for kind, r in enumerate(self.rate_of)]
        table = np.array([*per_type, 0.0], dtype=np.float64)
        out: NDArray[np.float64] = table[self._free_type_array]  # type -1 reads the last entry, 0
        return out

    @cached_property
    def _free_type_array(self) -> NDArray[np.int64]:
        """:attr:`free_type` as an array, made once (the measure asks per eligibility key)."""
        return np.array(self.free_type, dtype=np.int64)


Rate = TypeVar("Rate", float, NDArray[np.float64])
"""A rate, or the rates of every node as an array."""


def either(pressure: Rate, rare: Rate) -> Rate:
    """The chance room is missed by the pool's confined work (``pressure``) or by a rare type's
    whole-node pod (``rare``), taken as independent: ``1 - (1 - p)(1 - r)``, written so that it is
    ``pressure`` itself, to the float, when ``rare`` is 0 (nodes of no rare type are priced exactly
    as before), and ``rare`` itself when ``pressure`` is 0. Works on floats and numpy arrays alike
    (the same operations, so the same floats)."""
    return pressure + rare * (1.0 - pressure)


def node_type(node: Node, labels: Sequence[str]) -> tuple[object, ...]:
    """What tells a GPU node's type apart: its pool labels, GPU count, cores and memory."""
    return (
        *(node.labels.get(label) for label in labels),
        node.gpus,
        node.allocatable.get(res.CPU, 0),
        node.allocatable.get(res.MEMORY, 0),
    )


def rare_groups(nodes: Sequence[Node], labels: Sequence[str]) -> list[list[int]]:
    """Per rare type of ``nodes`` (see the module docstring), its nodes' indices; ``labels``: the
    pool labels. Fresh lists, the caller's.

    Asked every cycle of a walk over every node while nodes rarely
    change: the live converter hands back the very Node objects for unchanged nodes, and model
    objects are immutable, so for the very same nodes in the same order and equal labels the last
    answer is the answer (kept for one call, compared by identity at C speed)."""
    global _last_rare
    last, wanted = _last_rare, tuple(labels)
    if last is not None and last[1] == wanted and len(last[0]) == len(nodes) and all(map(is_, last[0], nodes)):
        return [list(group) for group in last[2]]
    groups = _rare_groups(nodes, labels)
    _last_rare = (tuple(nodes), wanted, tuple(tuple(group) for group in groups))
    return groups


_last_rare: tuple[tuple[Node, ...], tuple[str, ...], tuple[tuple[int, ...], ...]] | None = None
"""The nodes, labels and answer of the last :func:`rare_groups` (one tuple: swapped whole, never edited)."""


def _rare_groups(nodes: Sequence[Node], labels: Sequence[str]) -> list[list[int]]:
    types: dict[tuple[object, ...], list[int]] = {}
    for i, node in enumerate(nodes):
        if node.gpus > 0:
            types.setdefault(node_type(node, labels), []).append(i)
    limit = RARE_SHARE * sum(len(members) for members in types.values())
    return [group for group in types.values() if len(group) <= limit]


def rare_types(
    nodes: Sequence[Node], groups: Sequence[Sequence[int]], free_milli: Sequence[int], ready: int
) -> RareTypes | None:
    """The rare types ``groups`` of ``nodes`` (:func:`rare_groups`) with their rates, None when no
    rare type has a wholly free node. ``free_milli``: per node, its GPU thousandths nobody holds;
    ``ready``: the ready nodes as a bit mask."""
    free_type = [-1] * len(nodes)
    members: list[int] = []
    rate_of: list[float] = []
    for group in groups:
        whole = [i for i in group if (ready >> i) & 1 and free_milli[i] >= nodes[i].gpus * FULL_GPU_MILLI]
        if not whole:
            continue
        for i in whole:
            free_type[i] = len(members)
        members.append(sum(1 << i for i in group))
        rate_of.append(1.0 / len(whole))
    if not members:
        return None
    return RareTypes(tuple(free_type), tuple(members), tuple(rate_of))
