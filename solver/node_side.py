"""The node side of a cycle's problem, reused from the last build when its inputs are the same.

The live scheduler builds a problem every cycle over a cluster whose nodes and bound pods mostly
did not change since the last cycle; rebuilding each node's free room, the node index and the
HyperNode domains is then a fixed cost that grows with the cluster, not with the new work. The
converter (:mod:`vcsat.adapters.convert.reuse`) hands back the very model objects of the last
cycle for Kubernetes objects that did not change, and model objects are immutable, so here
"unchanged" is object identity:

- a node's room (its row of free resources, free whole GPU indices and GPU shares held) is reused
  when the node, every pod bound to it and the problem's resources are those of the last build;
- the node index (:func:`vcsat.solver.rules.predicates.node_index`), the largest allocatable per
  resource and the HyperNode domains when every node (and HyperNode) is.

Which nodes' inputs changed since the last build is read off the change set of the two snapshots
(:mod:`vcsat.solver.changes`), found once per cycle for every carry, rather than by comparing each
node's bound pods with the last build's. Everything is recomputed for what changed, with the same
code as a fresh build, so the problem is equal to a fresh one by construction
(``tests/test_node_side.py`` and ``tests/test_changes.py`` check it over random change sequences).
The caches hold the objects they are keyed by, so their identities cannot be reused while an entry
lives; they keep the last build only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from vcsat.model import Node, Pod, Snapshot
from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI, gpu_holdings
from vcsat.solver import changes

_T = TypeVar("_T")


@dataclass(frozen=True)
class NodeRoom:
    """One node's room before this cycle's placements."""

    free: tuple[int, ...]
    """Per resource of the problem: allocatable less what bound pods request (whole GPUs: the
    free indices; GPU thousandths: whole free GPUs and what shared GPUs have left)."""
    free_gpu_ids: tuple[int, ...]
    shared_milli: dict[int, int]


@dataclass(frozen=True)
class _RoomEntry:
    node: Node
    bound: tuple[Pod, ...]
    room: NodeRoom


_rooms: tuple[tuple[str, ...], dict[str, _RoomEntry], Snapshot | None] = ((), {}, None)
"""The last build's room per node name, for its resources, and the snapshot it was built for."""
_last: dict[str, tuple[tuple[object, ...], object]] = {}
"""Per cached part, the objects it was computed from and its value."""


def node_room(
    node: Node, bound: Sequence[Pod], resources: Sequence[str], resource_index: dict[str, int] | None = None
) -> NodeRoom:
    """A node's room, computed afresh. ``resource_index``: each of ``resources`` by its position
    (made here when not given; a build gives one for all its nodes)."""
    # A dict, not any mapping: the lookups below, per bound pod and resource, are then native reads.
    index = resource_index if resource_index is not None else {name: i for i, name in enumerate(resources)}
    allocatable = node.allocatable
    row = [allocatable.get(name, 0) for name in resources]
    # The pods that hold GPUs or GPU shares, found in the same pass: only they decide the GPU
    # indices (gpu_holdings skips every other pod), and on most nodes there is none.
    holders: list[Pod] = []
    gpu, gpu_milli = res.GPU, res.GPU_MILLI  # read off the module once, not per request
    for pod in bound:
        holds = False
        for name, amount in pod.requests.items():
            if amount and name in (gpu, gpu_milli):
                holds = True
            i = index.get(name)
            if i is not None:
                row[i] -= amount
        if holds:
            holders.append(pod)
    gpus = node.gpus
    share_milli: dict[int, int]
    if holders:
        holdings = gpu_holdings(gpus, holders)
        # A GPU that holds shares takes no whole-GPU pod (contract §1).
        free_ids = holdings.free_whole(gpus)
        share_milli = dict(holdings.share_milli)
    else:
        free_ids, share_milli = tuple(range(gpus)), {}
    milli_index = index.get(gpu_milli)
    if milli_index is not None:
        # Room for shares: whole free GPUs (a whole-GPU pod takes 1000 of it per GPU, see
        # problem.request_of) and what the shared GPUs have left. Packing shares onto GPUs is
        # checked exactly by the greedy and the decode; the model sees this sum.
        row[milli_index] = FULL_GPU_MILLI * len(free_ids) + sum(FULL_GPU_MILLI - used for used in share_milli.values())
    gpu_index = index.get(gpu)
    if gpu_index is not None:
        # Whole GPUs are the free indices, which is stricter than the count when shares hold some.
        row[gpu_index] = min(row[gpu_index], len(free_ids))
    return NodeRoom(tuple(row), free_ids, share_milli)


def node_rooms(snapshot: Snapshot, resources: Sequence[str]) -> list[NodeRoom]:
    """Every node's room, in ``snapshot.nodes`` order; a node whose inputs are the last build's
    very objects keeps its room from then."""
    global _rooms
    names = tuple(resources)
    last_names, last, last_snapshot = _rooms
    if last_names != names:
        last, last_snapshot = {}, None
    on_node = snapshot.pods_on_node
    rooms: list[NodeRoom] = []
    index = {name: i for i, name in enumerate(names)}
    # Mostly new objects: every room afresh costs less than finding which changed.
    last_snapshot = changes.worth_carrying(last_snapshot, snapshot, "nodes")
    if last_snapshot is not None:
        # Every node of the last snapshot has its entry, so a node the change set leaves out is
        # the very node of then with the very pods bound to it: its entry stands.
        touched = frozenset() if last_snapshot is snapshot else changes.between(last_snapshot, snapshot).nodes_touched
        kept = dict(last)
        for name in touched:
            kept.pop(name, None)
        for node in snapshot.nodes:
            name = node.name
            if name in touched:
                bound = on_node.get(name, ())
                entry = kept[name] = _RoomEntry(node, tuple(bound), node_room(node, bound, names, index))
            else:
                entry = kept[name]
            rooms.append(entry.room)
        _rooms = (names, kept, snapshot)
        return rooms
    kept = {}  # no last build for these resources: every room afresh
    for node in snapshot.nodes:
        bound = on_node.get(node.name, ())
        found = kept[node.name] = _RoomEntry(node, tuple(bound), node_room(node, bound, names, index))
        rooms.append(found.room)
    _rooms = (names, kept, snapshot)
    return rooms


def reused(part: str, inputs: Sequence[object], compute: Callable[[], _T]) -> _T:
    """``compute()``, or its value from the last call for ``part`` when ``inputs`` are the very
    objects of that call (``compute`` must depend on nothing else)."""
    key = tuple(inputs)
    found = _last.get(part)
    if found is not None and _same(found[0], key):
        return found[1]  # type: ignore[return-value]
    value = compute()
    _last[part] = (key, value)
    return value


def largest_allocatable(nodes: Sequence[Node]) -> dict[str, int]:
    """Per resource, the most any one node has (a pod's value is its share of this)."""

    def compute() -> dict[str, int]:
        largest: dict[str, int] = {}
        for node in nodes:
            for name, amount in node.allocatable.items():
                largest[name] = max(largest.get(name, 0), amount)
        return largest

    return dict(reused("largest", nodes, compute))


def forget() -> None:
    """Drop every cached part (tests; a process that stops scheduling)."""
    global _rooms
    _rooms = ((), {}, None)
    _last.clear()


def _same(before: Sequence[object], now: Sequence[object]) -> bool:
    return len(before) == len(now) and all(a is b for a, b in zip(before, now, strict=True))
