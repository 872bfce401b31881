"""Attach slots a victim frees: NodeVolumeLimits after its eviction.

kube-scheduler counts the unique CSI volumes of the pods on a node against the driver's limit in
its CSINode; DefaultPreemption judges a node with its victims removed, so a volume only victims
use stops counting, and a preemptor that needs an attach slot on a node at its limit can take
the slot of a lower-priority pod it evicts.

Here a victim frees, per limited driver of its node, the volumes that no other pod bound there
uses and that no pending pod of the cycle uses (those are the shared volumes of
:mod:`vcsat.solver.rules.attach`, which a preemptor on the node would keep attached). It enters
the preempt model as the victim's amount of the driver's ``attachable-volumes-csi-<driver>``
resource, freed like cpu when it goes. A volume several bound pods share is freed by none of them
alone; it is a *joint slot* (:func:`joint_attach_slots`), freed when every one of its users is
evicted, which the preempt model expresses with one variable per such volume (kube-scheduler,
removing all lower-priority pods and reprieving those it can, evicts them all when the preemptor
needs that slot). Nothing on a node already over its limit is credited.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vcsat.model import Node, Pod, Snapshot
from vcsat.solver.rules.attach import SharedAttach
from vcsat.solver.rules.volumes import ATTACHABLE_PREFIX, VolumeRules


def freed_attach_slots(
    snapshot: Snapshot,
    nodes: Sequence[Node],
    resources: Sequence[str],
    victims: Sequence[tuple[Pod, int]],
    shared: frozenset[str] = frozenset(),
) -> dict[str, dict[int, int]]:
    """Per victim (pod key, node index): per resource index, the attach slots its eviction frees.

    ``shared``: volumes pending pods use (never credited). Empty when the problem counts no
    ``attachable-volumes-csi-*`` resource or no victim stands on a node with a CSINode limit."""
    prefix = ATTACHABLE_PREFIX
    column = {name.removeprefix(prefix): r for r, name in enumerate(resources) if name.startswith(prefix)}
    if not column:
        return {}
    rules: VolumeRules | None = None
    users_of: dict[int, dict[str, int]] = {}
    over: dict[tuple[int, str], bool] = {}
    """(node, driver): more volumes attached than the limit (the node's slots are negative, which
    the problem's room, floored at zero, does not show: no eviction there is credited)."""
    out: dict[str, dict[int, int]] = {}
    for pod, node in victims:
        if not pod.claims:
            continue
        csinode = snapshot.csinode_by_name.get(nodes[node].name)
        if csinode is None or not any(driver in column for driver in csinode.limits):
            continue
        if rules is None:
            rules = VolumeRules(snapshot, ())
        users = users_of.get(node)
        if users is None:
            users = users_of[node] = {}
            held: dict[str, int] = {}
            for other in snapshot.pods_on_node.get(nodes[node].name, ()):
                for key, driver in rules.csi_volumes(other).items():
                    if key not in users:
                        held[driver] = held.get(driver, 0) + 1
                    users[key] = users.get(key, 0) + 1
            for driver, limit in csinode.limits.items():
                over[(node, driver)] = held.get(driver, 0) > limit
        freed: dict[int, int] = {}
        for key, driver in rules.csi_volumes(pod).items():
            if driver not in column or csinode.limits.get(driver) is None or over.get((node, driver), False):
                continue
            if users.get(key, 0) == 1 and key not in shared:
                freed[column[driver]] = freed.get(column[driver], 0) + 1
        if freed:
            out[pod.key] = freed
    return out


@dataclass(frozen=True)
class JointSlot:
    """One attach slot of ``node``'s ``resource`` column that only the eviction of every pod in
    ``users`` (pod keys, two or more, all victims of the run) frees: their one shared volume."""

    node: int
    resource: int
    users: tuple[str, ...]


def joint_attach_slots(
    snapshot: Snapshot,
    nodes: Sequence[Node],
    resources: Sequence[str],
    victims: Sequence[tuple[Pod, int]],
    shared: frozenset[str] = frozenset(),
) -> list[JointSlot]:
    """The volumes that two or more bound pods of a node use, all of them among ``victims``, of a
    driver the node's CSINode limits (and not over its limit there), that no pending pod uses
    (``shared``): each frees one slot once all its users are gone."""
    prefix = ATTACHABLE_PREFIX
    column = {name.removeprefix(prefix): r for r, name in enumerate(resources) if name.startswith(prefix)}
    if not column:
        return []
    victim_keys: dict[int, set[str]] = {}
    for pod, node in victims:
        if pod.claims:
            victim_keys.setdefault(node, set()).add(pod.key)
    rules: VolumeRules | None = None
    out: list[JointSlot] = []
    for node in sorted(victim_keys):
        csinode = snapshot.csinode_by_name.get(nodes[node].name)
        if csinode is None or not any(driver in column for driver in csinode.limits):
            continue
        if rules is None:
            rules = VolumeRules(snapshot, ())
        users: dict[str, list[str]] = {}
        driver_of: dict[str, str] = {}
        for other in snapshot.pods_on_node.get(nodes[node].name, ()):
            for key, driver in rules.csi_volumes(other).items():
                users.setdefault(key, []).append(other.key)
                driver_of[key] = driver
        held: dict[str, int] = {}
        for key in users:
            held[driver_of[key]] = held.get(driver_of[key], 0) + 1
        for key in sorted(users):
            driver = driver_of[key]
            limit = csinode.limits.get(driver)
            pods = users[key]
            if (
                driver not in column
                or limit is None
                or held[driver] > limit
                or key in shared
                or len(pods) < 2
                or not victim_keys[node].issuperset(pods)
            ):
                continue
            out.append(JointSlot(node=node, resource=column[driver], users=tuple(sorted(pods))))
    return out


def holds_shared(snapshot: Snapshot, nodes: Sequence[Node], pod: Pod, node: int, attach: SharedAttach) -> bool:
    """Whether the running pod holds, on a node where its driver is limited, a volume that pending
    pods share (:mod:`vcsat.solver.rules.attach`). The preempt model counts such a volume as
    attached for good (a preemptor using it takes no slot), so such a pod is no victim: were it
    evicted, the volume could leave the node and the preemptor would need a slot after all."""
    if not pod.claims:
        return False
    for key, driver in VolumeRules(snapshot, ()).csi_volumes(pod).items():
        if key in attach.driver and (node, driver) in attach.limited:
            return True
    return False
