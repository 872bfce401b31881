"""kube-scheduler's volume filters, folded into per-pod node restrictions before the search.

A pod's PersistentVolumeClaims limit where it may run, by facts the cycle does not change: which
volume a claim is bound to and that volume's node affinity and zone labels, which volumes a
WaitForFirstConsumer claim could still bind to, which claims another pod already holds. So they are
computed once per pod here, as a :class:`~vcsat.solver.predicates.NodeRestriction` in its
eligibility key, and cost nothing in the CP-SAT model. The rules follow kube-scheduler v1.35:

- **VolumeRestrictions**: a claim with access mode ``ReadWriteOncePod`` that a running pod uses
  refuses the pod everywhere. Between pending pods that share one such claim, only the first in
  queue order (higher priority, then older, then by key) may use it this cycle, the others are
  refused as if it were in use: at most one of them is placed (conservative: the first may stay
  unplaced for other reasons while a later one could have gone).
- **VolumeBinding**: a missing claim, a Lost one or one being deleted refuses the pod everywhere; so
  does an unbound claim of an Immediate class (or of no or an unknown class), or one pre-bound by
  ``volumeName`` without the bind being completed ("pod has unbound immediate
  PersistentVolumeClaims"). A fully bound claim's volume must exist and its node affinity match
  the node. The unbound claims of a WaitForFirstConsumer class need, on the node, distinct
  available volumes of their class (smallest claims first, each the smallest volume that is big
  enough, with the access modes, volume mode, labels and node affinity), or else a provisioner
  whose ``allowedTopologies`` admit the node. Storage capacity tracking (CSIStorageCapacity) is
  not modelled: provisioning is taken to have room. Pending pods whose claims could bind the same
  available volume do not both count on it: the later one in queue order sees only the volumes
  no earlier one could take (conservative: it may wait a cycle for a volume the other did not use).
- **VolumeZone**: a node with any zone or region label must carry, for every zone or region label
  of each named volume, one of the volume's values (``__``-separated); the legacy
  ``failure-domain.beta.kubernetes.io`` labels of a volume match the node's GA labels too.

NodeVolumeLimits changes as pods land, so it is not a restriction but a resource: see
:func:`csi_volumes` and :func:`attachable_resource`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Final

from vcsat.model import Node, Pod, Snapshot
from vcsat.model.storage import (
    READ_WRITE_ONCE_POD,
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
)
from vcsat.solver.predicates import NodeRestriction, PredicateCode, affinity_matches

NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
RWOP_CONFLICT: Final = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)
NODE_CONFLICT: Final = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST: Final = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ZONE_CONFLICT: Final = "node(s) had no available volume zone"
UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
MAX_VOLUME_COUNT: Final = "node(s) exceed max volume count"

ZONE_LABELS: Final = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
_GA_LABEL: Final = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
ATTACHABLE_PREFIX: Final = "attachable-volumes-csi-"
"""Problem resources named ``attachable-volumes-csi-<driver>`` count a driver's unique volumes."""


def attachable_resource(driver: str) -> str:
    return ATTACHABLE_PREFIX + driver


@dataclass(frozen=True)
class _Refusal:
    code: PredicateCode
    message: str


class VolumeRules:
    """The volume rules of one snapshot: build once per cycle, ask per pending pod."""

    def __init__(self, snapshot: Snapshot, pending: Sequence[Pod]) -> None:
        self.snapshot = snapshot
        self.nodes = snapshot.nodes
        self._affinity: dict[str, frozenset[str]] = {}
        self._rwop_owner = self._rwop_owners(pending)
        self._taken_before = self._contended(pending)

    # --- claims and their holders -------------------------------------------------------------

    def claim(self, pod: Pod, name: str) -> PersistentVolumeClaim | None:
        return self.snapshot.claim_by_key.get(f"{pod.namespace}/{name}")

    @cached_property
    def _claims_in_use(self) -> frozenset[str]:
        """Claim keys some running pod (bound, not finished) uses."""
        return frozenset(
            f"{pod.namespace}/{name}" for pod in self.snapshot.pods if pod.bound for name in pod.claims
        )

    def _rwop_owners(self, pending: Sequence[Pod]) -> dict[str, str]:
        """Per ReadWriteOncePod claim key no running pod uses: the pending pod that may take it."""
        owner: dict[str, str] = {}
        for pod in sorted(pending, key=lambda p: (-p.priority, p.created, p.key)):
            for name in pod.claims:
                claim = self.claim(pod, name)
                if claim is not None and READ_WRITE_ONCE_POD in claim.access_modes:
                    owner.setdefault(claim.key, pod.key)
        return owner

    def _contended(self, pending: Sequence[Pod]) -> dict[str, frozenset[str]]:
        """Per pending pod: the available volumes a pod before it in queue order might bind.

        Two pods must not count on one volume, and which pod gets it is not known before the solve:
        a pod's waiting claims count only on the volumes no earlier pod could take (and on
        provisioning), so whatever both are given, both can bind.
        """
        out: dict[str, frozenset[str]] = {}
        seen: set[str] = set()
        for pod in sorted(pending, key=lambda p: (-p.priority, p.created, p.key)):
            mine: set[str] = set()
            for name in pod.claims:
                claim = self.claim(pod, name)
                if claim is not None and self._delayed(claim) and not claim.fully_bound:
                    mine.update(v.name for v in self.snapshot.volumes if v.claim is None and _could_suit(v, claim))
            if mine:
                out[pod.key] = frozenset(seen)
                seen |= mine
        return out

    # --- per pod ------------------------------------------------------------------------------

    def restriction(self, pod: Pod) -> NodeRestriction | None:
        """The nodes the pod's volumes allow, or None when they allow every node."""
        if not pod.claims:
            return None
        claims: list[PersistentVolumeClaim] = []
        for name in dict.fromkeys(pod.claims):
            claim = self.claim(pod, name)
            if claim is None:
                return _nowhere("VolumeBinding", f'persistentvolumeclaim "{name}" not found')
            claims.append(claim)
        everywhere = self._pod_level(pod, claims)
        if everywhere is not None:
            return _nowhere(everywhere.code, everywhere.message)
        refusals: dict[str, tuple[PredicateCode, str]] = {}
        allowed: set[str] = set()
        taken = self._taken_before.get(pod.key, frozenset())
        for node in self.nodes:
            refusal = self._node_level(claims, node, taken)
            if refusal is None:
                allowed.add(node.name)
            else:
                refusals[node.name] = (refusal.code, refusal.message)
        if not refusals:
            return None
        return NodeRestriction(frozenset(allowed), refusals)

    def _pod_level(self, pod: Pod, claims: list[PersistentVolumeClaim]) -> _Refusal | None:
        """What refuses the pod on every node (kube-scheduler's PreFilter results), in plugin order."""
        for claim in claims:
            if READ_WRITE_ONCE_POD not in claim.access_modes:
                continue
            if claim.key in self._claims_in_use or self._rwop_owner.get(claim.key, pod.key) != pod.key:
                return _Refusal("VolumeRestrictions", f"{RWOP_CONFLICT} (claim {claim.name})")
        for claim in claims:
            if claim.lost:
                gone = f'persistentvolume "{claim.volume_name}"'
                return _Refusal(
                    "VolumeBinding", f'persistentvolumeclaim "{claim.name}" bound to non-existent {gone}'
                )
            if claim.deleting:
                return _Refusal("VolumeBinding", f'persistentvolumeclaim "{claim.name}" is being deleted')
        for claim in claims:
            if not claim.fully_bound and not self._delayed(claim):
                return _Refusal("VolumeBinding", f"{UNBOUND_IMMEDIATE} (claim {claim.name})")
        for claim in claims:
            if claim.volume_name and claim.volume_name not in self.snapshot.volume_by_name:
                return _Refusal("VolumeZone", f'persistentvolume "{claim.volume_name}" not found')
        return None

    def _delayed(self, claim: PersistentVolumeClaim) -> bool:
        """An unbound claim the scheduler binds (WaitForFirstConsumer, no volume named yet)."""
        if claim.volume_name:
            return False
        storage_class = self.snapshot.storage_class_by_name.get(claim.storage_class) if claim.storage_class else None
        return storage_class is not None and storage_class.binding_mode == WAIT_FOR_FIRST_CONSUMER

    def _node_level(self, claims: list[PersistentVolumeClaim], node: Node, taken: frozenset[str]) -> _Refusal | None:
        """The first of VolumeBinding's and VolumeZone's filters the node fails, or None."""
        volumes = self.snapshot.volume_by_name
        missing = False
        for claim in claims:
            if not claim.fully_bound:
                continue
            volume = volumes.get(claim.volume_name)
            if volume is None:
                missing = True
            elif node.name not in self._matching(volume):
                return _Refusal("VolumeBinding", NODE_CONFLICT)
        if missing:
            return _Refusal("VolumeBinding", PV_NOT_EXIST)
        delayed = [claim for claim in claims if not claim.fully_bound and self._delayed(claim)]
        if delayed and not self._can_bind(delayed, node, taken):
            return _Refusal("VolumeBinding", BIND_CONFLICT)
        return self._zone(claims, node)

    def _matching(self, volume: PersistentVolume) -> frozenset[str]:
        """Names of the nodes the volume's node affinity admits (cached per volume)."""
        found = self._affinity.get(volume.name)
        if found is None:
            terms = volume.node_affinity
            found = frozenset(node.name for node in self.nodes if terms is None or affinity_matches(terms, node))
            if terms is not None and not terms:
                found = frozenset()  # required with no terms: Kubernetes matches no node
            self._affinity[volume.name] = found
        return found

    def _can_bind(self, claims: list[PersistentVolumeClaim], node: Node, taken: frozenset[str]) -> bool:
        """VolumeBinding's search for the unbound WaitForFirstConsumer claims on one node, without
        the volumes in ``taken``."""
        chosen: set[str] = set(taken)
        for claim in sorted(claims, key=lambda c: c.request_bytes):
            if claim.selected_node is not None and claim.selected_node != node.name:
                return False
        for claim in sorted((c for c in claims if c.selected_node is None), key=lambda c: c.request_bytes):
            volume = self._find_volume(claim, node, chosen)
            if volume is not None:
                chosen.add(volume.name)
                continue
            if not self._can_provision(claim, node):
                return False
        # Claims whose node provisioning already chose (the checks above let only this node through).
        return all(self._can_provision(claim, node) for claim in claims if claim.selected_node is not None)

    def _find_volume(self, claim: PersistentVolumeClaim, node: Node, chosen: set[str]) -> PersistentVolume | None:
        """``FindMatchingVolume``: a volume pre-bound to the claim, else the smallest that fits."""
        best: PersistentVolume | None = None
        for volume in self.snapshot.volumes:
            if volume.name in chosen or volume.storage_class != claim.storage_class:
                continue
            if volume.claim is not None and volume.claim != claim.key:
                continue
            if volume.capacity_bytes < claim.request_bytes or volume.volume_mode != claim.volume_mode:
                continue
            if volume.deleting:
                continue
            fits_node = node.name in self._matching(volume)
            if volume.claim == claim.key:
                return volume if fits_node else None
            if not fits_node or not _could_suit(volume, claim):
                continue
            if best is None or volume.capacity_bytes < best.capacity_bytes:
                best = volume
        return best

    def _can_provision(self, claim: PersistentVolumeClaim, node: Node) -> bool:
        storage_class = self.snapshot.storage_class_by_name.get(claim.storage_class)
        if storage_class is None or storage_class.provisioner in ("", NO_PROVISIONER):
            return False
        topologies = storage_class.allowed_topologies
        return not topologies or affinity_matches(topologies, node)

    def _zone(self, claims: list[PersistentVolumeClaim], node: Node) -> _Refusal | None:
        if not any(label in node.labels for label in ZONE_LABELS):
            return None
        for claim in claims:
            volume = self.snapshot.volume_by_name.get(claim.volume_name) if claim.volume_name else None
            if volume is None:
                continue
            for label in ZONE_LABELS:
                value = volume.labels.get(label)
                if value is None:
                    continue
                zones = {zone for zone in value.split("__") if zone}
                if not zones:
                    continue  # unparsable: Kubernetes ignores the label
                have = node.labels.get(label, node.labels.get(_GA_LABEL.get(label, label)))
                if have is None or have not in zones:
                    return _Refusal("VolumeZone", ZONE_CONFLICT)
        return None

    # --- NodeVolumeLimits ---------------------------------------------------------------------

    def csi_volumes(self, pod: Pod) -> dict[str, str]:
        """Per unique CSI volume the pod uses: its driver (NodeVolumeLimits' counting)."""
        out: dict[str, str] = {}
        for name in pod.claims:
            claim = self.claim(pod, name)
            if claim is None:
                continue
            volume = self.snapshot.volume_by_name.get(claim.volume_name) if claim.volume_name else None
            if volume is not None:
                if volume.csi_driver and volume.csi_handle:
                    out[f"{volume.csi_driver}/{volume.csi_handle}"] = volume.csi_driver
                continue
            storage_class = self.snapshot.storage_class_by_name.get(claim.storage_class)
            if storage_class is not None and storage_class.provisioner:
                out[f"{storage_class.provisioner}/claim:{claim.key}"] = storage_class.provisioner
        return out

    def attached(self, node: str) -> dict[str, str]:
        """Unique CSI volumes the pods bound to the node use, with their drivers."""
        out: dict[str, str] = {}
        for pod in self.snapshot.pods_on_node.get(node, ()):
            out.update(self.csi_volumes(pod))
        return out

    def limited_drivers(self) -> frozenset[str]:
        return frozenset(driver for csinode in self.snapshot.csinodes for driver in csinode.limits)


def csi_room(rules: VolumeRules, drivers: Iterable[str], nodes: Sequence[Node], unlimited: int) -> list[dict[str, int]]:
    """Per node, per driver: unique volumes it may still attach (``unlimited`` without a limit)."""
    out: list[dict[str, int]] = []
    for node in nodes:
        limits: Mapping[str, int] = {}
        csinode = rules.snapshot.csinode_by_name.get(node.name)
        if csinode is not None:
            limits = csinode.limits
        attached = rules.attached(node.name) if limits else {}
        row: dict[str, int] = {}
        for driver in drivers:
            limit = limits.get(driver)
            row[driver] = unlimited if limit is None else limit - sum(1 for d in attached.values() if d == driver)
        out.append(row)
    return out


def _could_suit(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """An unclaimed volume's node-independent match for a claim (``FindMatchingVolume``)."""
    return (
        volume.phase == "Available"
        and not volume.deleting
        and volume.storage_class == claim.storage_class
        and volume.capacity_bytes >= claim.request_bytes
        and volume.volume_mode == claim.volume_mode
        and (claim.selector is None or claim.selector.matches(volume.labels))
        and set(claim.access_modes) <= set(volume.access_modes)
    )


def _nowhere(code: PredicateCode, message: str) -> NodeRestriction:
    return NodeRestriction(frozenset(), {}, (code, message))
