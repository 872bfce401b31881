"""The validator's own reading of the volume rules: may these placements mount their claims?

Part of :mod:`vcsat.solver.validator.check`, written from the Kubernetes storage documentation and apart from
the solver's :mod:`vcsat.solver.rules.volumes`, so that one mistake cannot hide itself. It judges the
whole decision at once, where the solver decides pod by pod:

- ``VolumeBinding``: every claim exists, is not Lost nor being deleted; a bound claim's volume
  exists and its node affinity admits the node; an unbound claim is of a WaitForFirstConsumer
  class; the unbound claims of *all* placements together can be given distinct available volumes
  that suit them and their nodes, each claim that gets none being one its class's provisioner may
  create on the node (``allowedTopologies``). The solver's rule is greedy and per pod; this one is a
  matching, so it accepts everything the solver's accepts.
- ``VolumeRestrictions``: a ReadWriteOncePod claim is used by at most one running or placed pod.
- ``VolumeZone``: a node with zone or region labels matches each named volume's zone and region
  labels (a ``__``-separated list; the legacy ``failure-domain.beta`` keys also read the GA ones).
- ``NodeVolumeLimits``: on a node whose CSINode gives a driver an ``allocatable.count``, the
  distinct volumes of that driver that bound pods and placements use stay within it, unless the
  placements add none.

Only placements are judged: a running pod's volumes are not the decision's fault.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Final

from vcsat.model import Node, Pod, Snapshot
from vcsat.model.cluster import Toleration
from vcsat.model.selectors import LabelSelector
from vcsat.model.storage import PersistentVolume, PersistentVolumeClaim
from vcsat.solver.rules.predicates import EligibilityKey, affinity_matches, compiled, node_index

RULES: Final = ("VolumeBinding", "VolumeRestrictions", "VolumeZone", "NodeVolumeLimits")

_TOPOLOGY_KEYS: Final = {
    "topology.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region": "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
"""Each zone/region label a volume may carry, and the GA key a node may carry instead."""

_ANY: Final = frozenset({Toleration(operator="Exists")})
"""Tolerates every taint and the cordon: a volume index looks at node affinity alone."""

Flag = tuple[str, str, str]
"""(rule, subject, message), as :class:`vcsat.solver.validator.check.Violation` takes them."""


def volume_violations(
    snapshot: Snapshot,
    placements: Sequence[tuple[Pod, Node]],
    victims: AbstractSet[str] = frozenset(),
    nominated: AbstractSet[str] = frozenset(),
) -> list[Flag]:
    """Every volume rule the placements (pod, node) break. Victims of the decision still hold their
    claims (as "now" in check.py). Attach slots (NodeVolumeLimits) are judged as kube-scheduler
    meets the pods: bindings beside every bound pod, victims (pod keys in ``victims``) included;
    nominations (pod keys in ``nominated``) once the victims are gone and the bindings are in."""
    placed = [(pod, node) for pod, node in placements if pod.claims]
    if not placed:
        return []
    out: list[Flag] = []
    claims = snapshot.claim_by_key
    pvs = snapshot.volume_by_name
    waiting: list[tuple[Pod, Node, PersistentVolumeClaim]] = []
    for pod, node in placed:
        for name in sorted(set(pod.claims)):
            claim = claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                out.append(("VolumeBinding", pod.key, f"claim {name} does not exist"))
                continue
            if claim.lost or claim.deleting:
                state = "Lost" if claim.lost else "being deleted"
                out.append(("VolumeBinding", pod.key, f"claim {name} is {state}"))
                continue
            if claim.volume_name and claim.bind_completed:
                pv = pvs.get(claim.volume_name)
                if pv is None:
                    missing = f"claim {name} is bound to missing volume {claim.volume_name}"
                    out.append(("VolumeBinding", pod.key, missing))
                    continue
                if not _pv_admits(pv, node):
                    out.append(
                        ("VolumeBinding", pod.key, f"volume {pv.name} of claim {name} does not admit node {node.name}")
                    )
                out.extend(_zone(pod, node, pv))
                continue
            storage_class = snapshot.storage_class_by_name.get(claim.storage_class)
            if claim.volume_name or storage_class is None or storage_class.binding_mode != "WaitForFirstConsumer":
                out.append(("VolumeBinding", pod.key, f"claim {name} is unbound and not WaitForFirstConsumer"))
                continue
            waiting.append((pod, node, claim))
    out.extend(_binding(snapshot, waiting))
    out.extend(_read_write_once_pod(snapshot, placed))
    out.extend(_limits(snapshot, placed, victims, nominated))
    return out


def _pv_admits(pv: PersistentVolume, node: Node) -> bool:
    """The volume's required node affinity (none: every node; an empty term list: no node)."""
    if pv.node_affinity is None:
        return True
    # The predicates' compiled form of node affinity: the one reading of NodeSelectorTerms that
    # check.py shares with the solver (contract §3), compiled once per distinct affinity.
    return bool(pv.node_affinity) and compiled(EligibilityKey(frozenset(), pv.node_affinity, frozenset())).affinity_ok(
        node
    )


def _zone(pod: Pod, node: Node, pv: PersistentVolume) -> list[Flag]:
    if not any(key in node.labels for key in _TOPOLOGY_KEYS):
        return []
    out: list[Flag] = []
    for key, ga_key in _TOPOLOGY_KEYS.items():
        if key not in pv.labels:
            continue
        allowed = [zone for zone in pv.labels[key].split("__") if zone]
        if not allowed:
            continue
        value = node.labels[key] if key in node.labels else node.labels.get(ga_key)
        if value not in allowed:
            out.append(
                ("VolumeZone", pod.key, f"volume {pv.name} is in {key}={pv.labels[key]}, node {node.name} is not")
            )
    return out


def _provisionable(snapshot: Snapshot, claim: PersistentVolumeClaim, node: Node) -> bool:
    storage_class = snapshot.storage_class_by_name[claim.storage_class]
    if storage_class.provisioner in ("", "kubernetes.io/no-provisioner"):
        return False
    if claim.selected_node is not None and claim.selected_node != node.name:
        return False
    topologies = storage_class.allowed_topologies
    if topologies and not affinity_matches(topologies, node):
        return False
    return _room_to_provision(snapshot, claim, node)


def _room_to_provision(snapshot: Snapshot, claim: PersistentVolumeClaim, node: Node) -> bool:
    """Storage capacity tracking (KEP 1472): when the class's provisioner is a CSIDriver with
    ``storageCapacity: true``, a CSIStorageCapacity object for that class whose ``nodeTopology``
    selects the node must report at least the claim's request, read from ``maximumVolumeSize``
    when it is set and from ``capacity`` otherwise. No object with a topology, no storage."""
    provisioner = snapshot.storage_class_by_name[claim.storage_class].provisioner
    driver = next((d for d in snapshot.csi_drivers if d.name == provisioner), None)
    if driver is None or not driver.storage_capacity:
        return True
    for report in snapshot.storage_capacities:
        if report.storage_class != claim.storage_class or report.node_topology is None:
            continue
        size = report.capacity_bytes if report.maximum_volume_size_bytes is None else report.maximum_volume_size_bytes
        if size is not None and size >= claim.request_bytes and report.node_topology.matches(node.labels):
            return True
    return False


def _suits(pv: PersistentVolume, claim: PersistentVolumeClaim, node: Node) -> bool:
    """Whether the volume may be bound to the claim for a pod on the node."""
    if pv.claim is not None:
        return pv.claim == claim.key and pv.capacity_bytes >= claim.request_bytes and _pv_admits(pv, node)
    return (
        pv.phase == "Available"
        and not pv.deleting
        and claim.selected_node is None
        and pv.storage_class == claim.storage_class
        and pv.capacity_bytes >= claim.request_bytes
        and pv.volume_mode == claim.volume_mode
        and all(mode in pv.access_modes for mode in claim.access_modes)
        and (claim.selector is None or _selects(claim.selector, pv.labels))
        and _pv_admits(pv, node)
    )


def _selects(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelector`` semantics, spelled out here rather than borrowed."""
    for requirement in selector.requirements:
        present = requirement.key in labels
        if requirement.operator == "Exists" and not present:
            return False
        if requirement.operator == "DoesNotExist" and present:
            return False
        if requirement.operator == "In" and labels.get(requirement.key) not in requirement.values:
            return False
        if requirement.operator == "NotIn" and present and labels[requirement.key] in requirement.values:
            return False
    return True


def _binding(snapshot: Snapshot, waiting: list[tuple[Pod, Node, PersistentVolumeClaim]]) -> list[Flag]:
    """Distinct volumes for every waiting claim that cannot be provisioned on its node."""
    # One claim used by two pods of the decision is one claim to bind (on one node).
    need: dict[str, tuple[Pod, Node, PersistentVolumeClaim]] = {}
    out: list[Flag] = []
    for pod, node, claim in waiting:
        first = need.get(claim.key)
        if first is not None and first[1].name != node.name:
            out.append(("VolumeBinding", pod.key, f"claim {claim.name} is also placed on {first[1].name}"))
            continue
        need.setdefault(claim.key, (pod, node, claim))
    must_match = [entry for entry in need.values() if not _provisionable(snapshot, entry[2], entry[1])]
    if not must_match:
        return out
    near = _volumes_by_node(snapshot)
    options = [
        [pv.name for pv in near.get(node.name, near[""]) if _suits(pv, claim, node)] for _, node, claim in must_match
    ]
    owner: dict[str, int] = {}
    assigned: dict[int, str] = {}

    def augment(start: int) -> bool:
        """Kuhn's augmenting path, breadth first, from claim ``start``."""
        reached: dict[str, int] = {}
        frontier = [start]
        while frontier:
            i = frontier.pop()
            for name in options[i]:
                if name in reached:
                    continue
                reached[name] = i
                if name in owner:
                    frontier.append(owner[name])
                    continue
                while True:  # flip the path back to start
                    j = reached[name]
                    previous = assigned.get(j)
                    owner[name], assigned[j] = j, name
                    if j == start or previous is None:
                        return True
                    name = previous
        return False

    for i, (pod, node, claim) in enumerate(must_match):
        if not augment(i):
            why = f"no volume left for claim {claim.name} on {node.name}, and none to provision"
            out.append(("VolumeBinding", pod.key, why))
    return out


def _volumes_by_node(snapshot: Snapshot) -> dict[str, list[PersistentVolume]]:
    """Per node name, the volumes whose node affinity may admit it (key ``""``: those for a node
    not listed). An index only: :func:`_suits` still judges each."""
    index = node_index(snapshot.nodes)
    wide: list[PersistentVolume] = []
    out: dict[str, list[PersistentVolume]] = {}
    unready = [node for node in snapshot.nodes if not node.ready]
    for pv in snapshot.volumes:
        if pv.node_affinity is None:
            wide.append(pv)
            continue
        mask = compiled(EligibilityKey(frozenset(), pv.node_affinity, _ANY)).mask(index)
        names = [node.name for node in index.nodes_of(mask)] + [n.name for n in unready if _pv_admits(pv, n)]
        for name in names:
            out.setdefault(name, []).append(pv)
    return {"": wide} | {name: wide + pvs for name, pvs in out.items()}


def _read_write_once_pod(snapshot: Snapshot, placed: list[tuple[Pod, Node]]) -> list[Flag]:
    users: dict[str, list[str]] = defaultdict(list)
    for pod in snapshot.pods:
        if pod.bound:
            for name in set(pod.claims):
                users[f"{pod.namespace}/{name}"].append(pod.key)
    out: list[Flag] = []
    for pod, _ in sorted(placed, key=lambda entry: entry[0].key):
        for name in sorted(set(pod.claims)):
            key = f"{pod.namespace}/{name}"
            claim = snapshot.claim_by_key.get(key)
            if claim is None or "ReadWriteOncePod" not in claim.access_modes:
                continue
            if users[key]:
                out.append(("VolumeRestrictions", pod.key, f"ReadWriteOncePod claim {name} is used by {users[key][0]}"))
            users[key].append(pod.key)
    return out


def _csi_of(snapshot: Snapshot, pod: Pod) -> dict[str, str]:
    """Distinct CSI volume name -> driver, for the pod's claims."""
    out: dict[str, str] = {}
    for name in pod.claims:
        claim = snapshot.claim_by_key.get(f"{pod.namespace}/{name}")
        if claim is None:
            continue
        pv = snapshot.volume_by_name.get(claim.volume_name) if claim.volume_name else None
        if pv is not None:
            if pv.csi_driver and pv.csi_handle:
                out[f"pv:{pv.csi_driver}:{pv.csi_handle}"] = pv.csi_driver
        else:
            storage_class = snapshot.storage_class_by_name.get(claim.storage_class)
            if storage_class is not None and storage_class.provisioner:
                out[f"new:{storage_class.provisioner}:{claim.key}"] = storage_class.provisioner
    return out


def _limits(
    snapshot: Snapshot, placed: list[tuple[Pod, Node]], victims: AbstractSet[str], nominated: AbstractSet[str]
) -> list[Flag]:
    by_node: dict[str, list[Pod]] = defaultdict(list)
    for pod, node in placed:
        by_node[node.name].append(pod)
    out: list[Flag] = []
    for node_name, pods in sorted(by_node.items()):
        csinode = snapshot.csinode_by_name.get(node_name)
        if csinode is None or not csinode.limits:
            continue
        bound = snapshot.pods_on_node.get(node_name, ())
        now = [pod for pod in pods if pod.key not in nominated]
        later = [pod for pod in pods if pod.key in nominated]
        # Bindings now, beside every bound pod; nominations after the evictions, beside the bindings.
        states: list[tuple[Sequence[Pod], list[Pod], str]] = [(bound, now, "")]
        if later:
            staying = [pod for pod in bound if pod.key not in victims]
            states.append(([*staying, *now], later, " after evictions"))
        for base, new, when in states:
            if not new:
                continue
            before: dict[str, str] = {}
            for pod in base:
                before.update(_csi_of(snapshot, pod))
            after = dict(before)
            for pod in new:
                after.update(_csi_of(snapshot, pod))
            for driver, limit in sorted(csinode.limits.items()):
                added = sum(1 for name, d in after.items() if d == driver and name not in before)
                total = sum(1 for d in after.values() if d == driver)
                if added and total > limit:
                    out.append(
                        (
                            "NodeVolumeLimits",
                            node_name,
                            f"{total} distinct {driver} volumes{when}, {added} of them new, "
                            f"where the node attaches {limit}",
                        )
                    )
    return out
