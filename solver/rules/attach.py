"""NodeVolumeLimits for CSI volumes that several pods share: one attach slot per node, not per pod.

kube-scheduler counts the *unique* CSI volumes on a node: a volume that a pod bound to the node
uses already takes no new slot for a second pod, and two pods placed together that use one volume
take one slot. A volume only one pending pod uses, held by no node with a limit, is a plain per-pod
amount of the ``attachable-volumes-csi-<driver>`` resource
(:meth:`vcsat.solver.rules.volumes.VolumeRules.requests`). The others, the *shared* volumes, are
kept here: which node holds which of them, and which (node, driver) pairs have a limit at all.

Pods with shared volumes carry them in their shape (:attr:`vcsat.solver.problem.Shape.volumes`),
which takes an exact bucket of its own, so a slot on a node says which volumes land there. The
CP-SAT model switches a boolean per (shared volume, limited node) on when any of its pods goes there
(:mod:`vcsat.solver.constraints.attach`); the greedy counts them with :class:`AttachTracker`; the
decode never moves such pods off the model's nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from vcsat.model import Node
from vcsat.solver.rules.volumes import VolumeRules, attachable_resource


@dataclass(frozen=True)
class SharedAttach:
    """The cycle's shared CSI volumes and the nodes whose attach limits they count against."""

    driver: dict[str, str]
    """Per shared volume (its unique name): its CSI driver."""
    resource: dict[str, int]
    """Per driver of a shared volume: its ``attachable-volumes-csi-<driver>`` resource index."""
    attached: dict[int, frozenset[str]]
    """Per node index: the shared volumes bound pods there use already (they cost nothing more)."""
    limited: frozenset[tuple[int, str]]
    """(node index, driver) pairs whose CSINode gives the driver a limit; elsewhere no count."""

    def new_on(self, node: int, volumes: frozenset[str], placed: AbstractSet[str] = frozenset()) -> dict[str, int]:
        """Per driver: how many of ``volumes`` would take a new slot on the node (besides those in
        ``placed``, put there this cycle already)."""
        out: dict[str, int] = {}
        held = self.attached.get(node, frozenset())
        for volume in volumes:
            driver = self.driver[volume]
            if (node, driver) in self.limited and volume not in held and volume not in placed:
                out[driver] = out.get(driver, 0) + 1
        return out


def shared_attach(rules: VolumeRules, nodes: Sequence[Node], resources: Sequence[str]) -> SharedAttach | None:
    """The shared volumes of the pending pods the rules were built for; None when there are none."""
    shared = rules.shared
    if not shared:
        return None
    driver: dict[str, str] = {}
    for pod in rules.pending:
        for key, of in rules.csi_volumes(pod).items():
            if key in shared:
                driver[key] = of
    drivers = set(driver.values())
    index = {name: i for i, name in enumerate(resources)}
    attached: dict[int, frozenset[str]] = {}
    limited: set[tuple[int, str]] = set()
    csinodes = rules.snapshot.csinode_by_name
    for i, node in enumerate(nodes):
        csinode = csinodes.get(node.name)
        if csinode is None:
            continue
        mine = {d for d in csinode.limits if d in drivers}
        if not mine:
            continue
        limited.update((i, d) for d in mine)
        held = frozenset(key for key in rules.attached(node.name) if key in shared)
        if held:
            attached[i] = held
    return SharedAttach(
        driver=driver,
        resource={d: index[attachable_resource(d)] for d in drivers},
        attached=attached,
        limited=frozenset(limited),
    )


class AttachTracker:
    """The greedy's count of shared volumes per node as it places and undoes pods.

    A shared volume new to a node takes one of the node's attach slots in the greedy's room (the
    ``attachable-volumes-csi-<driver>`` column of :class:`~vcsat.solver.greedy.Room`) when its first
    pod lands there, and gives it back when its last pod leaves; a pod with shared volumes fits a
    node when its own volumes and its shared ones new to the node fit what is left."""

    def __init__(self, attach: SharedAttach, volumes: Sequence[frozenset[str]]) -> None:
        self.attach = attach
        self.volumes = volumes
        """Per shape: its shared volumes."""
        self.users: dict[int, dict[str, int]] = {}
        """Per node: per shared volume placed there this cycle (and new to it), its pods."""

    def allows(self, shape: int, request: tuple[int, ...], free: list[int], node: int) -> bool:
        volumes = self.volumes[shape]
        if not volumes:
            return True
        new = self.attach.new_on(node, volumes, self.users.get(node, {}).keys())
        resource = self.attach.resource
        return all(request[resource[driver]] + count <= free[resource[driver]] for driver, count in new.items())

    def add(self, shape: int, node: int, delta: int) -> dict[int, int]:
        """One pod of the shape placed on the node (``delta`` 1) or taken off it (-1): per resource
        index, the attach slots this takes (negative: gives back)."""
        volumes = self.volumes[shape]
        if not volumes:
            return {}
        users = self.users.setdefault(node, {})
        held = self.attach.attached.get(node, frozenset())
        slots: dict[int, int] = {}
        for volume in volumes:
            driver = self.attach.driver[volume]
            if (node, driver) not in self.attach.limited or volume in held:
                continue
            before = users.get(volume, 0)
            after = before + delta
            if after:
                users[volume] = after
            else:
                users.pop(volume, None)
            if (before == 0) != (after == 0):
                r = self.attach.resource[driver]
                slots[r] = slots.get(r, 0) + (1 if after else -1)
        return slots


def slots_taken(
    attach: SharedAttach, volumes: Sequence[frozenset[str]], shape_slots: dict[tuple[int, int], int]
) -> dict[tuple[int, int], int]:
    """Per (node, resource index): the attach slots the shared volumes of these placements take
    (per (shape, node) pod counts), each volume once per node."""
    on: set[tuple[int, str]] = set()
    for (s, node), k in shape_slots.items():
        if k > 0:
            on.update((node, volume) for volume in volumes[s])
    out: dict[tuple[int, int], int] = {}
    for node, volume in on:
        driver = attach.driver[volume]
        if (node, driver) in attach.limited and volume not in attach.attached.get(node, frozenset()):
            key = (node, attach.resource[driver])
            out[key] = out.get(key, 0) + 1
    return out
