"""Mutable room of one cycle for the baseline schedulers: what each node, GPU and queue has left.

The baselines are greedy loops that place pods one at a time and sometimes take placements back (a
gang that does not fit whole is discarded, as Volcano's ``Statement`` does). They need cheap, mutable
bookkeeping of what each node has free, which GPU devices are whole or shared, and what each queue
may still take; CP-SAT's aggregated :class:`vcsat.solver.problem.Problem` is the wrong shape for
that. Everything here counts exactly as the validator (:mod:`vcsat.solver.validator.check`) does (its
``demand`` of a pod, the GPU indices of :mod:`vcsat.model.gpus`, queue capability over requests),
so a placement this module accepts is one the validator accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from vcsat.model import Node, Pod, Snapshot
from vcsat.model import resources as res
from vcsat.model.cluster import DEFAULT_QUEUE, Queue
from vcsat.model.gpus import gpu_holdings
from vcsat.solver.rules.predicates import EligibilityKey, NodeIndex, eligibility_key
from vcsat.solver.rules.volumes import VolumeRules
from vcsat.solver.validator.capacity import demand

FULL_GPU_MILLI = 1000


class Placement(NamedTuple):
    """One pod placed by a baseline: the node and the GPU indices it takes."""

    pod: Pod
    node: str
    gpus: tuple[int, ...]


@dataclass
class NodeRoom:
    """One node's room: free amounts per resource and the state of each GPU device."""

    index: int
    node: Node
    free: dict[str, int]
    """Allocatable less what bound and placed pods take (may be negative on an overfull node)."""
    requested: dict[str, int]
    """What bound and placed pods take, per resource (kube-scheduler's ``Requested``)."""
    whole: set[int] = field(default_factory=set)
    """GPU indices held by whole-GPU pods."""
    shares: dict[int, int] = field(default_factory=dict)
    """Per GPU index, the thousandths its shares hold."""
    attach_limits: dict[str, int] = field(default_factory=dict)
    """Per CSI driver the node's CSINode limits: how many distinct volumes it attaches (NodeVolumeLimits)."""
    volume_users: dict[str, int] = field(default_factory=dict)
    """Per distinct CSI volume on the node (of a limited driver): the bound and placed pods using it."""
    volume_driver: dict[str, str] = field(default_factory=dict)
    csi_of: Callable[[Pod], Mapping[str, str]] | None = None
    """A pod's distinct CSI volumes with their drivers; None when no pending pod has claims."""

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def gpu_total(self) -> int:
        return self.node.gpus

    def gpu_left(self, index: int) -> int:
        """Thousandths of GPU ``index`` nobody holds (0 when a whole-GPU pod has it)."""
        if index in self.whole:
            return 0
        return FULL_GPU_MILLI - self.shares.get(index, 0)

    def gpu_lefts(self) -> list[int]:
        return [self.gpu_left(i) for i in range(self.gpu_total)]

    def free_gpus(self) -> list[int]:
        """Indices neither held whole nor shared, in index order."""
        return [i for i in range(self.gpu_total) if i not in self.whole and not self.shares.get(i)]

    def share_room(self, milli: int) -> list[int]:
        """Indices a share of ``milli`` thousandths can go to, in index order."""
        return [
            i for i in range(self.gpu_total) if i not in self.whole and self.shares.get(i, 0) + milli <= FULL_GPU_MILLI
        ]

    def fits(self, pod: Pod, need: dict[str, int] | None = None) -> bool:
        """Whether the pod fits here now: every resource it takes, and its GPU devices."""
        need = demand(pod) if need is None else need
        free = self.free
        for name, amount in need.items():
            if amount > 0 and amount > free.get(name, 0):
                return False
        if not self.volumes_fit(pod):
            return False
        if pod.gpus > 0:
            return len(self.free_gpus()) >= pod.gpus
        if pod.gpu_milli > 0:
            return bool(self.share_room(pod.gpu_milli))
        return True

    def volumes_fit(self, pod: Pod) -> bool:
        """NodeVolumeLimits: per limited driver, the distinct volumes attached here plus the pod's
        new ones stay within the limit (a pod that adds no new volume always passes)."""
        if not self.attach_limits or self.csi_of is None or not pod.claims:
            return True
        wanted = self.csi_of(pod)
        for driver, limit in self.attach_limits.items():
            new = sum(1 for key, of in wanted.items() if of == driver and key not in self.volume_users)
            if new and sum(1 for key in self.volume_users if self.volume_driver[key] == driver) + new > limit:
                return False
        return True

    def attach(self, pod: Pod, sign: int) -> None:
        """Count the pod's CSI volumes of limited drivers in (``sign`` 1) or out (-1)."""
        if not self.attach_limits or self.csi_of is None or not pod.claims:
            return
        for key, driver in self.csi_of(pod).items():
            if driver not in self.attach_limits:
                continue
            users = self.volume_users.get(key, 0) + sign
            if users > 0:
                self.volume_users[key] = users
                self.volume_driver[key] = driver
            else:
                self.volume_users.pop(key, None)


class QueueRoom:
    """What each queue may still take (its ``capability`` less what its pods hold) and whether it is
    open; counted over pod requests, as the validator counts them."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.queues: dict[str, Queue] = dict(snapshot.queue_by_name)
        self.queues.setdefault(DEFAULT_QUEUE, Queue(name=DEFAULT_QUEUE))
        self.group_queue = {group.key: group.queue for group in snapshot.podgroups}
        self.room: dict[str, dict[str, int]] = {}
        self.used: dict[str, dict[str, int]] = {name: {} for name in self.queues}
        for pod in snapshot.pods:
            name = self.queue_of(pod)
            if pod.managed and pod.bound and name in self.used:
                _add(self.used[name], pod.requests, 1)
        for name, queue in self.queues.items():
            if queue.capability is not None:
                self.room[name] = {r: cap - self.used[name].get(r, 0) for r, cap in queue.capability.items()}

    def queue_of(self, pod: Pod) -> str | None:
        """The pod's queue (a lone pod's ``scheduling.volcano.sh/queue-name``, as Volcano reads it);
        None when its PodGroup is not in the snapshot."""
        if pod.group is None:
            return pod.queue_name or DEFAULT_QUEUE
        return self.group_queue.get(pod.group)

    def is_open(self, queue: str | None) -> bool:
        """Whether the queue exists and takes new placements."""
        return queue is not None and queue in self.queues and self.queues[queue].open

    def allows(self, queue: str | None, pod: Pod) -> bool:
        """Whether the queue is open and its capability has room for the pod's requests."""
        if queue is None or not self.is_open(queue):
            return False
        room = self.room.get(queue)
        if room is None:
            return True
        return all(pod.requests.get(r, 0) <= 0 or pod.requests[r] <= left for r, left in room.items())

    def take(self, queue: str, pod: Pod, sign: int = 1) -> None:
        _add(self.used.setdefault(queue, {}), pod.requests, sign)
        room = self.room.get(queue)
        if room is not None:
            for r in room:
                room[r] -= sign * pod.requests.get(r, 0)


class ClusterState:
    """Rooms of every node and queue for one cycle, and the placements made so far."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.index = NodeIndex(snapshot.nodes)
        self.rooms: list[NodeRoom] = []
        self.room_by_name: dict[str, NodeRoom] = {}
        for i, node in enumerate(snapshot.nodes):
            bound = snapshot.pods_on_node.get(node.name, ())
            held = res.total(demand(pod) for pod in bound)
            holdings = gpu_holdings(node.gpus, bound)
            room = NodeRoom(
                index=i,
                node=node,
                free=res.sub(node.allocatable, held),
                requested=held,
                whole=holdings.whole_held,
                shares=dict(holdings.share_milli),
            )
            self.rooms.append(room)
            self.room_by_name[node.name] = room
        self.queues = QueueRoom(snapshot)
        self.placements: list[Placement] = []
        self._eligible: dict[EligibilityKey, list[NodeRoom]] = {}
        pending = [pod for pod in snapshot.pods if pod.pending]
        self.volumes = VolumeRules(snapshot, pending) if any(pod.claims for pod in pending) else None
        """kube-scheduler's volume filters (claims bound to volumes pinned to nodes, ...), when a pod has claims."""
        if self.volumes is not None:
            for room in self.rooms:
                csinode = snapshot.csinode_by_name.get(room.name)
                if csinode is None or not csinode.limits:
                    continue
                room.attach_limits = dict(csinode.limits)
                room.csi_of = self.volumes.csi_volumes
                for pod in snapshot.pods_on_node.get(room.name, ()):
                    room.attach(pod, 1)
        self._largest: dict[str, int] = {}
        self.demands: dict[str, dict[str, int]] = {}

    def largest(self, name: str) -> int:
        """The largest allocatable amount of a resource on any node (for normalising scores)."""
        value = self._largest.get(name)
        if value is None:
            value = max((r.node.allocatable.get(name, 0) for r in self.rooms), default=0)
            self._largest[name] = value
        return value

    def demand(self, pod: Pod) -> dict[str, int]:
        need = self.demands.get(pod.key)
        if need is None:
            need = self.demands[pod.key] = demand(pod)
        return need

    def eligible(self, pod: Pod) -> list[NodeRoom]:
        """Rooms of the nodes where every predicate holds for the pod, in snapshot order: none for a
        pod with scheduling gates (or resource claims), which Kubernetes does not schedule; its
        volumes' node restrictions included (VolumeBinding, VolumeRestrictions, VolumeZone)."""
        if pod.held:
            return []
        restriction = self.volumes.restriction(pod) if self.volumes is not None and pod.claims else None
        key = eligibility_key(pod, restriction)
        rooms = self._eligible.get(key)
        if rooms is None:
            nodes = self.index.nodes_of(self.index.mask(key))
            rooms = self._eligible[key] = [self.room_by_name[n.name] for n in nodes]
        return rooms

    def feasible(self, pod: Pod) -> list[NodeRoom]:
        """Eligible rooms where the pod also fits now."""
        need = self.demand(pod)
        return [room for room in self.eligible(pod) if room.fits(pod, need)]

    def take(self, pod: Pod, room: NodeRoom, gpus: tuple[int, ...]) -> Placement:
        need = self.demand(pod)
        _add(room.free, need, -1)
        _add(room.requested, need, 1)
        if pod.gpus > 0:
            room.whole.update(gpus)
        elif pod.gpu_milli > 0:
            room.shares[gpus[0]] = room.shares.get(gpus[0], 0) + pod.gpu_milli
        room.attach(pod, 1)
        queue = self.queues.queue_of(pod)
        if queue is not None:
            self.queues.take(queue, pod)
        placement = Placement(pod, room.name, gpus)
        self.placements.append(placement)
        return placement

    def give(self, placement: Placement) -> None:
        """Undo a placement (the last one made for that pod)."""
        pod, room = placement.pod, self.room_by_name[placement.node]
        need = self.demand(pod)
        _add(room.free, need, 1)
        _add(room.requested, need, -1)
        if pod.gpus > 0:
            room.whole.difference_update(placement.gpus)
        elif pod.gpu_milli > 0:
            index = placement.gpus[0]
            room.shares[index] -= pod.gpu_milli
            if not room.shares[index]:
                del room.shares[index]
        room.attach(pod, -1)
        queue = self.queues.queue_of(pod)
        if queue is not None:
            self.queues.take(queue, pod, -1)
        for i in range(len(self.placements) - 1, -1, -1):
            if self.placements[i] is placement:
                del self.placements[i]
                break


class Statement:
    """Placements of one job, kept or taken back together (Volcano's ``framework.Statement``)."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.made: list[Placement] = []

    def allocate(self, pod: Pod, room: NodeRoom, gpus: tuple[int, ...]) -> None:
        self.made.append(self.state.take(pod, room, gpus))

    def discard(self) -> None:
        for placement in reversed(self.made):
            self.state.give(placement)
        self.made = []

    def commit(self) -> list[Placement]:
        made, self.made = self.made, []
        return made


def lowest_free_gpus(room: NodeRoom, pod: Pod) -> tuple[int, ...]:
    """Whole GPUs as the device plugin hands them out (lowest free indices); for a share, the lowest
    GPU with room (first fit over devices). Empty for a pod without GPUs."""
    if pod.gpus > 0:
        return tuple(room.free_gpus()[: pod.gpus])
    if pod.gpu_milli > 0:
        return (room.share_room(pod.gpu_milli)[0],)
    return ()


def fullest_gpu_share(room: NodeRoom, pod: Pod) -> tuple[int, ...]:
    """Whole GPUs at the lowest free indices; a share on the fullest GPU that still has room for it
    (best fit over devices, lowest index among equals)."""
    if pod.gpus == 0 and pod.gpu_milli > 0:
        candidates = room.share_room(pod.gpu_milli)
        return (min(candidates, key=lambda i: (room.gpu_left(i), i)),)
    return lowest_free_gpus(room, pod)


def _add(target: dict[str, int], amounts: Mapping[str, int], sign: int) -> None:
    for name, amount in amounts.items():
        target[name] = target.get(name, 0) + sign * amount
