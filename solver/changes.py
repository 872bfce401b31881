"""What changed from one snapshot to another, by the identity of their model objects, found once.

Why: the live scheduler's carries (each node's room in :mod:`vcsat.solver.node_side`, each
PodGroup's needs in :mod:`vcsat.solver.admission_groups`, the pods' sums in
:mod:`vcsat.solver.pod_sums`) keep their last values for the model objects that are the very
objects of the last snapshot, and each used to walk every pod, node or group to find which are not.
The converter (:mod:`vcsat.adapters.convert.reuse`) hands back the very model object for a
Kubernetes object that did not change, and model objects are immutable, so the difference of two
snapshots taken by identity says exactly which objects a carry must take out and put in. It is
found here once for a pair of snapshots and read by every carry whose last state is the first one.

It is a pure function of the two snapshots: any snapshot may follow any other (a test, a replay,
the one-shot ``vcsat solve``). When little is shared (files read one after another in one process
share no object), taking every old object out and putting every new one in costs more than a
fresh pass, so the change set also says whether most of each kind of object was kept
(:attr:`Changes.pods_mostly_kept` and its siblings: at most half of the two snapshots' objects
gone or new), and the carries that run in every process (the node rooms, admission's group
sums, the pricing tallies) build afresh when it was not. A carry with no last state (a
one-shot solve) never asks and works as before. Only the last few pairs are kept; each holds
both snapshots, so the identities it compares cannot be reused while it lives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import compress
from operator import not_
from typing import Literal, TypeVar

from vcsat.model import Node, Pod, PodGroup, Snapshot

_T = TypeVar("_T")


@dataclass(frozen=True, eq=False)
class Changes:
    """The objects of ``before`` that are not in ``after`` (gone) and those of ``after`` that are not
    in ``before`` (new), each in its snapshot's order. A changed object is both: its old value is
    gone and its new one is new."""

    before: Snapshot
    after: Snapshot
    pods_gone: tuple[Pod, ...]
    pods_new: tuple[Pod, ...]
    nodes_gone: tuple[Node, ...]
    nodes_new: tuple[Node, ...]
    groups_gone: tuple[PodGroup, ...]
    groups_new: tuple[PodGroup, ...]
    pod_ids: dict[int, Pod]
    """``after``'s pods by id (shared: read it, never change it)."""
    node_ids: dict[int, Node]
    """``after``'s nodes by id (shared)."""
    group_ids: dict[int, PodGroup]
    """``after``'s PodGroups by id (shared)."""

    @cached_property
    def pods_mostly_kept(self) -> bool:
        """Whether at most half of the two snapshots' pods are gone or new: then a carry that redoes
        only those costs less than a fresh pass over ``after``'s pods; otherwise (snapshots read
        afresh from a file, one after another in one process) a carry costs more, and carries
        build afresh (the same answer: a carry equals a fresh pass whatever it is given)."""
        return mostly_kept(len(self.pods_gone), len(self.pods_new), len(self.before.pods), len(self.after.pods))

    @cached_property
    def nodes_mostly_kept(self) -> bool:
        """:attr:`pods_mostly_kept` of the nodes."""
        return mostly_kept(len(self.nodes_gone), len(self.nodes_new), len(self.before.nodes), len(self.after.nodes))

    @cached_property
    def groups_mostly_kept(self) -> bool:
        """:attr:`pods_mostly_kept` of the PodGroups."""
        return mostly_kept(
            len(self.groups_gone), len(self.groups_new), len(self.before.podgroups), len(self.after.podgroups)
        )

    @cached_property
    def nodes_touched(self) -> frozenset[str]:
        """Names of the nodes whose room may differ: a node gone or new, or one a bound pod gone or
        new is (or was) on (:attr:`Snapshot.pods_on_node`'s pods)."""
        names = {node.name for node in self.nodes_gone}
        names.update(node.name for node in self.nodes_new)
        for pods in (self.pods_gone, self.pods_new):
            names.update(pod.node_name for pod in pods if pod.bound and pod.node_name is not None)
        return frozenset(names)

    @cached_property
    def groups_touched(self) -> frozenset[str]:
        """Keys of the PodGroups whose object or pods (:attr:`Snapshot.pods_of_group`) may differ."""
        keys = {group.key for group in self.groups_gone}
        keys.update(group.key for group in self.groups_new)
        for pods in (self.pods_gone, self.pods_new):
            keys.update(pod.group for pod in pods if pod.group is not None)
        return frozenset(keys)


_KEPT = 3
"""Pairs kept: a carry may have seen a snapshot the others did not (the queue gauges read the
pods' sums after a follow-up cycle that solves nothing), so one cycle may ask for two pairs."""
_pairs: list[Changes] = []
"""The last pairs asked, newest last."""


def worth_carrying(last: Snapshot | None, snapshot: Snapshot, kind: Literal["nodes", "groups"]) -> Snapshot | None:
    """``last`` where a carry from it to ``snapshot`` costs less than a fresh pass: the very
    snapshot, or one that kept most of the pods and most of ``kind``
    (:attr:`Changes.pods_mostly_kept` and its siblings); None otherwise, and without a ``last``."""
    if last is None or last is snapshot:
        return last
    found = between(last, snapshot)
    kept = found.nodes_mostly_kept if kind == "nodes" else found.groups_mostly_kept
    return last if found.pods_mostly_kept and kept else None


def between(before: Snapshot, after: Snapshot) -> Changes:
    """What changed from ``before`` to ``after``, found once for each of the last pairs asked (a
    snapshot's index of a kept pair serves the next pair it is in)."""
    global _pairs
    pairs = _pairs
    for found in pairs:
        if found.before is before and found.after is after:
            return found
    old_pods, old_nodes, old_groups = _indexes(before)
    pods, nodes, groups = _indexes(after)
    found = Changes(
        before=before,
        after=after,
        pods_gone=_missing(before.pods, pods),
        pods_new=_missing(after.pods, old_pods),
        nodes_gone=_missing(before.nodes, nodes),
        nodes_new=_missing(after.nodes, old_nodes),
        groups_gone=_missing(before.podgroups, groups),
        groups_new=_missing(after.podgroups, old_groups),
        pod_ids=pods,
        node_ids=nodes,
        group_ids=groups,
    )
    # A new list, so that a reader in another thread never sees one being changed.
    _pairs = [*pairs[-(_KEPT - 1) :], found]
    return found


def _indexes(snapshot: Snapshot) -> tuple[dict[int, Pod], dict[int, Node], dict[int, PodGroup]]:
    """``snapshot``'s pods, nodes and PodGroups by id: a kept pair's, or made afresh."""
    for found in reversed(_pairs):
        if found.after is snapshot:
            return found.pod_ids, found.node_ids, found.group_ids
    return _ids(snapshot.pods), _ids(snapshot.nodes), _ids(snapshot.podgroups)


def forget() -> None:
    """Drop the kept pairs (tests; a process that stops scheduling)."""
    global _pairs
    _pairs = []


def mostly_kept(gone: int, new: int, before: int, after: int) -> bool:
    """Whether at most half of two collections' objects (``before`` and ``after`` of them) are
    ``gone`` or ``new``: where a carry that redoes only those costs less than a fresh pass."""
    return 2 * (gone + new) <= before + after


def _ids(objects: Sequence[_T]) -> dict[int, _T]:
    # C-level walks (no bytecode per object): a 5,000-node cluster holds tens of thousands of pods.
    return dict(zip(map(id, objects), objects, strict=True))


def _missing(objects: Sequence[_T], other: dict[int, _T]) -> tuple[_T, ...]:
    """``objects`` not in ``other`` (by identity), in order. ``other``'s values are alive, so an id
    found there is the same object."""
    return tuple(compress(objects, map(not_, map(other.__contains__, map(id, objects)))))
