"""The pods' requests summed per queue and per node, and the Ready nodes' allocatable, carried from
one snapshot to the next.

Why: every cycle the fair shares (:mod:`vcsat.solver.shares.deserved`: what each queue's pods
hold and ask, the room other schedulers' pods take) and admission (:mod:`vcsat.solver.enqueue`:
what is bound on Ready nodes) sum the requests of every pod of the cluster, about 0.1 CPU s at
5,000 nodes, while between two live cycles only the pods the watch reported changed. The live
scheduler's converter hands back the very model objects of the last cycle for Kubernetes objects
that did not change, and model objects are immutable, so a pod (or PodGroup) that is the same
object as last time counts as it did then; only the others are entered or taken out of the
:class:`~vcsat.solver.ledger.Ledger` sums; which those are is read off the change set of the two
snapshots (:mod:`vcsat.solver.changes`), found once per cycle for every carry. Any snapshot may
follow any other (a test, a replay, two schedulers in one process): the difference is taken by
identity either way, so the answer is a fresh pass's whatever came before, only slower when little
is shared.

Carrying costs more than one fresh pass (about 5 times, for the ledgers' entries and counts), so it
pays only where snapshot follows snapshot sharing most objects: the live scheduler turns it on
(:func:`carry`); a one-shot solve, a replay or a test sums each snapshot afresh as before.

Two levels for the queues: pods are summed per PodGroup (which does not change with the
PodGroup's spec), and the groups' subtotals per queue, so a PodGroup whose queue changes, or
that appears after its pods, moves its subtotal without its pods being read again.

The cluster's room (admission's idle room, the fair shares' total) sums, every cycle, the
allocatable of every Ready node and what the pods bound on Ready nodes hold: two more passes of
5,000 nodes each at 5,000 nodes, though nodes rarely change. So the Ready nodes' allocatable is
carried like the pods (a node that is the same model object as last time counts as it did), and
what is bound on a set of nodes is the sum over all nodes less the few nodes outside the set (the
not Ready ones), not a walk over every node's sum.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from vcsat.model import Pod, Snapshot
from vcsat.model import resources as res
from vcsat.model.cluster import DEFAULT_QUEUE
from vcsat.model.queue_rule import queue_in
from vcsat.solver import changes
from vcsat.solver.ledger import Ledger

_Own = tuple[str, str, bool]
"""A pod's bucket by ownership: ("group", group key, bound) or ("queue", queue name, bound)."""
Sums = tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]


class _Carried:
    """The ledgers of the last snapshot summed, and the objects they were summed from."""

    def __init__(self) -> None:
        self.snapshot: Snapshot | None = None
        self.own: Ledger[int, _Own] = Ledger()
        """Bound or pending pods of ours, per group (or queue, without a group) and boundness."""
        self.queues: Ledger[_Own, tuple[str, bool]] = Ledger()
        """The ``own`` subtotals per queue and boundness (entries keyed by their ``own`` bucket)."""
        self.on_node: Ledger[int, str] = Ledger(named=False)
        """Bound pods per node name (read by resource name only)."""
        self.foreign: Ledger[int, str] = Ledger(named=False)
        """Bound pods of other schedulers per node name (read by resource name only)."""
        self.on_any: Ledger[int, bool] = Ledger(named=False)
        """``on_node``'s entries in one bucket (``True``): what is bound on any node."""
        self.foreign_any: Ledger[int, bool] = Ledger(named=False)
        """``foreign``'s entries in one bucket (``True``)."""
        self.ready: Ledger[int, bool] = Ledger()
        """The Ready nodes' allocatable in one bucket (``True``), resources named as a fresh total's."""

    def update(self, snapshot: Snapshot) -> None:
        if snapshot is self.snapshot:
            return
        found = changes.between(self.snapshot, snapshot) if self.snapshot is not None else None
        if found is not None:
            # The change set lists the pods gone and new in their snapshots' order.
            gone_pods = [(id(pod), pod) for pod in found.pods_gone]
            new_pods = [(id(pod), pod) for pod in found.pods_new]
        else:  # the first pass: nothing carried yet, every pod new
            gone_pods, new_pods = [], list({id(pod): pod for pod in snapshot.pods}.items())
        touched: set[_Own] = set()
        for gone, pod in gone_pods:
            bucket = _own_bucket(pod)
            if bucket is not None:
                self.own.drop(gone)
                touched.add(bucket)
            self.on_node.drop(gone)
            self.foreign.drop(gone)
            self.on_any.drop(gone)
            self.foreign_any.drop(gone)
        own: list[tuple[int, _Own, Mapping[str, int]]] = []
        on_node: list[tuple[int, str, Mapping[str, int]]] = []
        foreign: list[tuple[int, str, Mapping[str, int]]] = []
        for new, pod in new_pods:
            bucket = _own_bucket(pod)
            if bucket is not None:
                own.append((new, bucket, pod.requests))
                touched.add(bucket)
            if pod.bound and pod.node_name is not None:
                on_node.append((new, pod.node_name, pod.requests))
                if not pod.managed:
                    foreign.append((new, pod.node_name, pod.requests))
        self.own.put_many(own)
        self.on_node.put_many(on_node)
        self.foreign.put_many(foreign)
        self.on_any.put_many((key, True, vector) for key, _, vector in on_node)
        self.foreign_any.put_many((key, True, vector) for key, _, vector in foreign)
        self._update_nodes(snapshot, found)
        if found is not None:
            moved = {group.key for group in found.groups_gone}
            moved.update(group.key for group in found.groups_new)
        else:
            moved = {group.key for group in snapshot.podgroups}
        for key in moved:
            touched.add(("group", key, True))
            touched.add(("group", key, False))
        by_key = snapshot.podgroup_by_key
        for bucket in touched:
            kind, name, bound = bucket
            subtotal = self.own.sum(bucket)
            queue: str | None = name
            if kind == "group":
                group = by_key.get(name)
                queue = group.queue if group is not None else None
            if subtotal is None or queue is None:
                self.queues.drop(bucket)
            else:
                # A copy: the ledger below keeps the vector it is given, the one above goes on changing.
                self.queues.put(bucket, (queue, bound), dict(subtotal))
        self.snapshot = snapshot

    def _update_nodes(self, snapshot: Snapshot, found: changes.Changes | None) -> None:
        if found is not None:
            for node in found.nodes_gone:
                self.ready.drop(id(node))
            self.ready.put_many((id(node), True, node.allocatable) for node in found.nodes_new if node.ready)
            return
        # The first pass (nothing carried yet), in the snapshot's order, so that a cold start names
        # the resources in a fresh total's order.
        nodes = {id(node): node for node in snapshot.nodes}
        self.ready.put_many((key, True, node.allocatable) for key, node in nodes.items() if node.ready)


def _own_bucket(pod: Pod) -> _Own | None:
    """Where a pod counts for its queue (:meth:`Snapshot.queue_of`), without reading its PodGroup:
    pods of other schedulers, and pods neither bound nor waiting, count for none."""
    if not pod.managed:
        return None
    bound = pod.bound
    if not bound and not pod.pending:
        return None
    if pod.group is not None:
        return ("group", pod.group, bound)
    return ("queue", pod.queue_name or DEFAULT_QUEUE, bound)


_carried = _Carried()
_lock = threading.Lock()
"""The cycle and a reader of queue shares (the dashboard) may ask at once."""
_carrying = False
_last_ready: tuple[Snapshot, dict[str, int], dict[str, int], dict[str, int]] | None = None
"""The last snapshot's :func:`ready_room`, summed afresh (kept while not carrying)."""


def carry(on: bool = True) -> None:
    """Carry the sums from one snapshot to the next (the live scheduler), or sum each afresh."""
    global _carrying
    _carrying = on
    if not on:
        forget()


def carrying() -> bool:
    """Whether sums are carried across snapshots (:func:`carry`)."""
    return _carrying


def queue_sums(snapshot: Snapshot) -> Sums:
    """Per queue, what its own pods hold (bound) and what they hold or ask (bound, or pending
    outside a Closed queue). Every queue of the snapshot has an entry in both; a queue named only
    by a PodGroup has one when one of its pods counts there. Fresh dicts, the caller's to keep."""
    closed = {queue.name for queue in snapshot.queues if not queue.open}
    if not _carrying:
        return _fresh_queue_sums(snapshot, closed)
    usage: dict[str, dict[str, int]] = {queue.name: {} for queue in snapshot.queues}
    demand: dict[str, dict[str, int]] = {queue.name: {} for queue in snapshot.queues}
    with _lock:
        _carried.update(snapshot)
        for (queue, bound), total in _carried.queues.sums.items():
            if bound:
                usage[queue] = _added(usage.get(queue), total)
            elif queue in closed:
                continue
            demand[queue] = _added(demand.get(queue), total)
    return usage, demand


def bound_on(snapshot: Snapshot, nodes: set[str]) -> dict[str, int]:
    """What every bound pod on one of ``nodes`` requests, summed (a fresh dict, read by name: a
    resource no such pod requests may be there at zero)."""
    if not _carrying:
        return _fresh_on(snapshot, nodes, foreign=False)
    with _lock:
        _carried.update(snapshot)
        return _total_on(_carried.on_node, _carried.on_any, nodes)


def foreign_on(snapshot: Snapshot, nodes: set[str]) -> dict[str, int]:
    """What the bound pods of other schedulers on one of ``nodes`` request, summed (a fresh dict,
    read by name as :func:`bound_on`'s)."""
    if not _carrying:
        return _fresh_on(snapshot, nodes, foreign=True)
    with _lock:
        _carried.update(snapshot)
        return _total_on(_carried.foreign, _carried.foreign_any, nodes)


def ready_room(snapshot: Snapshot) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """The Ready nodes' room as admission and the fair shares read it: :func:`ready_allocatable`,
    and :func:`bound_on` and :func:`foreign_on` of the Ready nodes (fresh dicts, the caller's to
    keep). A one-shot cycle asks three times (admission's idle room, the shares' total twice):
    summed afresh in one pass over the pods and kept for the last snapshot."""
    global _last_ready
    if _carrying:
        ready = {node.name for node in snapshot.nodes if node.ready}
        return ready_allocatable(snapshot), bound_on(snapshot, ready), foreign_on(snapshot, ready)
    last = _last_ready
    if last is None or last[0] is not snapshot:
        last = _last_ready = (snapshot, *_fresh_ready(snapshot))
    return dict(last[1]), dict(last[2]), dict(last[3])


def ready_allocatable(snapshot: Snapshot) -> dict[str, int]:
    """The allocatable of the snapshot's Ready nodes, summed: ``res.total`` of them (a fresh dict)."""
    if not _carrying:
        return res.total(node.allocatable for node in snapshot.nodes if node.ready)
    with _lock:
        _carried.update(snapshot)
        return dict(_carried.ready.sum(True) or {})


def forget() -> None:
    """Drop what was carried (tests; a process that stops scheduling)."""
    global _carried, _last_ready
    with _lock:
        _carried = _Carried()
        _last_ready = None


# How the fresh passes count: pods of one spec share their requests dict (the converter reads each
# spec once), so a pass counts pods per (bucket, dict), inline in its loop (a call per pod was a
# tenth of the pass), and adds each dict's amounts times its count: the same integer sums. Buckets
# and resources are first met in the same order as pod by pod (an entry comes where its first pod
# was), so the sums' keys keep their order. The entry holds the dict, so the id in the key is not
# reused while it lives.


def _fresh_queue_sums(snapshot: Snapshot, closed: set[str]) -> Sums:
    """:func:`queue_sums` in one pass over the pods (nothing carried)."""
    usage: dict[str, dict[str, int]] = {queue.name: {} for queue in snapshot.queues}
    demand: dict[str, dict[str, int]] = {queue.name: {} for queue in snapshot.queues}
    counted: dict[tuple[str, bool, int], list[Any]] = {}
    groups = snapshot.podgroup_by_key
    for pod in snapshot.pods:
        bound = pod.bound
        if not bound and not pod.pending:
            continue
        name = queue_in(pod, groups)
        if name is None or (not bound and name in closed):
            continue
        # One more pod of its requests dict in its bucket (see above).
        requests = pod.requests
        key = (name, bound, id(requests))
        entry = counted.get(key)
        if entry is None:
            counted[key] = [requests, 1]
        else:
            entry[1] += 1
    for (name, bound, _), (requests, count) in counted.items():
        targets = (usage.setdefault(name, {}), demand.setdefault(name, {})) if bound else (demand.setdefault(name, {}),)
        for vector in targets:
            for resource, amount in requests.items():
                vector[resource] = vector.get(resource, 0) + amount * count
    return usage, demand


def _fresh_ready(snapshot: Snapshot) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """:func:`ready_room` in one pass over the nodes and one over the pods (nothing carried)."""
    ready = {node.name for node in snapshot.nodes if node.ready}
    allocatable = res.total(node.allocatable for node in snapshot.nodes if node.ready)
    bound: dict[str, int] = {}
    foreign: dict[str, int] = {}
    counted: dict[tuple[bool, int], list[Any]] = {}
    for pod in snapshot.pods:
        if pod.bound and pod.node_name in ready:
            # One more pod of its requests dict in its bucket (see above).
            requests = pod.requests
            key = (pod.managed, id(requests))
            entry = counted.get(key)
            if entry is None:
                counted[key] = [requests, 1]
            else:
                entry[1] += 1
    for (managed, _), (requests, count) in counted.items():
        for resource, amount in requests.items():
            bound[resource] = bound.get(resource, 0) + amount * count
        if not managed:
            for resource, amount in requests.items():
                foreign[resource] = foreign.get(resource, 0) + amount * count
    return allocatable, bound, foreign


def _fresh_on(snapshot: Snapshot, nodes: set[str], *, foreign: bool) -> dict[str, int]:
    """:func:`bound_on` (``foreign``: :func:`foreign_on`) in one pass over the pods (nothing carried)."""
    out: dict[str, int] = {}
    for pod in snapshot.pods:
        if pod.bound and pod.node_name in nodes and not (foreign and pod.managed):
            for resource, amount in pod.requests.items():
                out[resource] = out.get(resource, 0) + amount
    return out


def _total_on(by_node: Ledger[int, str], overall: Ledger[int, bool], nodes: set[str]) -> dict[str, int]:
    """The sum over ``nodes`` of ``by_node``'s buckets, as ``overall`` (every entry) less the buckets
    outside ``nodes``: a live cluster's nodes are nearly all Ready, so few are walked."""
    out = dict(overall.sum(True) or {})
    sums = by_node.sums
    for name in sums.keys() - nodes:
        for resource, amount in sums[name].items():
            out[resource] = out.get(resource, 0) - amount
    return out


def _added(into: Mapping[str, int] | None, more: Mapping[str, int]) -> dict[str, int]:
    out = dict(into) if into else {}
    for name, amount in more.items():
        out[name] = out.get(name, 0) + amount
    return out
