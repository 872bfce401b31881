"""kube-scheduler's volume filters, folded into per-pod node restrictions before the search.

A pod's PersistentVolumeClaims limit where it may run, by facts the cycle does not change: which
volume a claim is bound to and that volume's node affinity and zone labels, which volumes a
WaitForFirstConsumer claim could still bind to, which claims another pod already holds. So they are
computed once per pod here, as a :class:`~vcsat.solver.rules.predicates.NodeRestriction` in its
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
  available volume do not both count on it, and of pending pods that share one waiting claim
  only the first in queue order is placed this cycle (the claim's node is chosen with it; the
  others follow once it is bound). Where every free volume of the class admits one node
  (local volumes), the class's waiting claims are counted per node as a resource (below), which
  is exact when they ask alike. Otherwise the later pod in queue order sees only the volumes no
  earlier one could take (conservative: it may wait a cycle for a volume the other did not use).
- **VolumeZone**: a node with any zone or region label must carry, for every zone or region label
  of each named volume, one of the volume's values (``__``-separated); the legacy
  ``failure-domain.beta.kubernetes.io`` labels of a volume match the node's GA labels too.

What changes as pods land is not a restriction but a per-node resource (:meth:`VolumeRules.requests`,
:meth:`VolumeRules.room`): NodeVolumeLimits' unique CSI volumes per driver, and the node-local
volumes a class's waiting claims bind (see ``_local_classes``). A CSI volume that several pods
share, or that a bound pod already holds, is not a per-pod request: it takes a node's attach slot
once, and none on a node that holds it (:meth:`VolumeRules.shared_volumes`,
:mod:`vcsat.solver.rules.attach`).
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import cached_property
from typing import Final

from vcsat.model import Node, Pod, Snapshot
from vcsat.model.cluster import Toleration
from vcsat.model.storage import (
    READ_WRITE_ONCE_POD,
    WAIT_FOR_FIRST_CONSUMER,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
)
from vcsat.solver.rules.predicates import (
    EligibilityKey,
    NodeIndex,
    NodeRestriction,
    PredicateCode,
    affinity_matches,
    node_index,
)

NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
RWOP_CONFLICT: Final = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)
NODE_CONFLICT: Final = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ZONE_CONFLICT: Final = "node(s) had no available volume zone"
NOT_ENOUGH_SPACE: Final = "node(s) did not have enough free storage"
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
LOCAL_PREFIX: Final = "vcsat.io/local-volumes-"
"""Problem resources named ``vcsat.io/local-volumes-<class>`` count a class's node-local volumes."""
_TOLERATE_ALL: Final = frozenset({Toleration(operator="Exists")})


def attachable_resource(driver: str) -> str:
    return ATTACHABLE_PREFIX + driver


def local_volume_resource(storage_class: str) -> str:
    return LOCAL_PREFIX + storage_class


@dataclass(frozen=True)
class VolumePlan:
    """VolumeBinding's PreBind for one pod on one node: the static volumes its waiting claims bind
    (claim, volume) and the claims to provision there (annotated with the node)."""

    bindings: tuple[tuple[PersistentVolumeClaim, PersistentVolume], ...] = ()
    provisions: tuple[PersistentVolumeClaim, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.bindings or self.provisions)


@dataclass(frozen=True)
class _Refusal:
    code: PredicateCode
    message: str


class VolumeRules:
    """The volume rules of one snapshot: build once per cycle, ask per pending pod."""

    def __init__(self, snapshot: Snapshot, pending: Sequence[Pod]) -> None:
        self.snapshot = snapshot
        self.nodes = snapshot.nodes
        self.pending = tuple(pending)
        self._affinity: dict[str, frozenset[str]] = {}
        self._zones: dict[str, frozenset[str]] = {}
        self._candidates_of: dict[str, list[PersistentVolume]] = {}
        self._unclaimed_of: dict[tuple[object, ...], list[PersistentVolume]] = {}
        self._bindable_of: dict[tuple[object, ...], frozenset[str]] = {}
        self._owner = self._owners(pending)
        """Per RWOP or waiting claim: the one pending pod that may use it this cycle."""
        self._local_room: dict[str, dict[str, int]] = {}
        self._local_claims: set[str] = set()
        self._local_classes(pending)
        self._taken_before = self._contended(pending)
        self._attached_of: dict[str, dict[str, str]] = {}
        self._shared = self._shared_volumes(pending)
        """CSI volumes of limited drivers counted once per node, not per pod (:meth:`shared_volumes`)."""

    # --- claims and their holders -------------------------------------------------------------

    def claim(self, pod: Pod, name: str) -> PersistentVolumeClaim | None:
        return self.snapshot.claim_by_key.get(f"{pod.namespace}/{name}")

    @cached_property
    def _claims_in_use(self) -> frozenset[str]:
        """Claim keys some running pod (bound, not finished) uses."""
        return frozenset(f"{pod.namespace}/{name}" for pod in self.snapshot.pods if pod.bound for name in pod.claims)

    def _owners(self, pending: Sequence[Pod]) -> dict[str, str]:
        """Per ReadWriteOncePod claim, and per waiting claim (its volume is chosen with the node of
        the first pod placed): the pending pod that may take it this cycle, the first in queue order."""
        owner: dict[str, str] = {}
        for pod in sorted(pending, key=lambda p: (-p.priority, p.created, p.key)):
            for name in pod.claims:
                claim = self.claim(pod, name)
                if claim is None:
                    continue
                if READ_WRITE_ONCE_POD in claim.access_modes or (not claim.fully_bound and self._delayed(claim)):
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
                if claim is None or claim.key in self._local_claims:
                    continue  # counted per node instead
                if self._delayed(claim) and not claim.fully_bound:
                    mine.update(v.name for v in self._candidates(claim) if v.claim is None)
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
        taken = self._taken_before.get(pod.key, frozenset())
        every = self._all_names
        # kube-scheduler's Filter order: VolumeBinding (bound volumes' node affinity, then the
        # waiting claims' search), then VolumeZone. Each as the set of nodes that pass it.
        bound_ok = every
        zone_ok = every
        for claim in claims:
            volume = self.snapshot.volume_by_name.get(claim.volume_name) if claim.volume_name else None
            if volume is None:
                continue
            if claim.fully_bound:
                bound_ok = bound_ok & self._matching(volume)
            zone_ok = zone_ok & self._zone_nodes(volume)
        delayed = [claim for claim in claims if not claim.fully_bound and self._delayed(claim)]
        bind_ok = every
        for claim in delayed:
            # Each waiting claim alone binds only where one of its volumes or its provisioner can.
            bind_ok = bind_ok & self._bindable(claim, taken)
        if len(delayed) > 1:
            # Together they need distinct volumes: kube-scheduler's search, node by node.
            nodes = self.snapshot.node_by_name
            bind_ok = frozenset(name for name in bind_ok if self._can_bind(delayed, nodes[name], taken))
        allowed = bound_ok & bind_ok & zone_ok
        if allowed == every:
            return None
        short = self._short_of_storage(delayed) & (bound_ok - bind_ok) if delayed else frozenset()
        groups: list[tuple[PredicateCode, str, frozenset[str]]] = [
            ("VolumeBinding", NODE_CONFLICT, every - bound_ok),
            ("VolumeBinding", BIND_CONFLICT, bound_ok - bind_ok - short),
            ("VolumeBinding", NOT_ENOUGH_SPACE, short),
            ("VolumeZone", ZONE_CONFLICT, (bound_ok & bind_ok) - zone_ok),
        ]
        return NodeRestriction(allowed, tuple(group for group in groups if group[2]))

    def _pod_level(self, pod: Pod, claims: list[PersistentVolumeClaim]) -> _Refusal | None:
        """What refuses the pod on every node (kube-scheduler's PreFilter results), in plugin order."""
        for claim in claims:
            if READ_WRITE_ONCE_POD not in claim.access_modes:
                continue
            if claim.key in self._claims_in_use or self._owner.get(claim.key, pod.key) != pod.key:
                return _Refusal("VolumeRestrictions", f"{RWOP_CONFLICT} (claim {claim.name})")
        for claim in claims:
            if claim.lost:
                gone = f'persistentvolume "{claim.volume_name}"'
                return _Refusal("VolumeBinding", f'persistentvolumeclaim "{claim.name}" bound to non-existent {gone}')
            if claim.deleting:
                return _Refusal("VolumeBinding", f'persistentvolumeclaim "{claim.name}" is being deleted')
        for claim in claims:
            if not claim.fully_bound and not self._delayed(claim):
                return _Refusal("VolumeBinding", f"{UNBOUND_IMMEDIATE} (claim {claim.name})")
        for claim in claims:
            owner = self._owner.get(claim.key, pod.key)
            if owner != pod.key and not claim.fully_bound:
                # Two pods placed at once could choose two nodes for the one claim: the later waits.
                return _Refusal("VolumeBinding", f"{BIND_CONFLICT} (claim {claim.name} is bound first for {owner})")
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

    def _bindable(self, claim: PersistentVolumeClaim, taken: frozenset[str]) -> frozenset[str]:
        """Nodes where this waiting claim alone can bind: what ``_can_bind`` finds for one claim."""
        if claim.selected_node is not None:
            node = self.snapshot.node_by_name.get(claim.selected_node)
            return frozenset({node.name}) if node is not None and self._can_provision(claim, node) else frozenset()
        candidates = self._candidates(claim)
        prebound = [volume for volume in candidates if volume.claim == claim.key]
        # Claims of one StatefulSet share their candidates (one list object): computed once for all.
        cache_key = (id(candidates) if not prebound else claim.key, claim.storage_class, taken)
        found = self._bindable_of.get(cache_key)
        if found is not None:
            return found
        out: set[str] = set()
        if prebound:
            # FindMatchingVolume: a volume pre-bound to the claim is the only one it may get.
            out |= self._matching(prebound[0])
        else:
            for volume in candidates:
                if volume.name not in taken:
                    out |= self._matching(volume)
        storage_class = self.snapshot.storage_class_by_name.get(claim.storage_class)
        if storage_class is not None and storage_class.provisioner not in ("", NO_PROVISIONER):
            out |= {node.name for node in self.nodes if self._can_provision(claim, node)}
        found = self._bindable_of[cache_key] = frozenset(out)
        return found

    def _candidates(self, claim: PersistentVolumeClaim) -> list[PersistentVolume]:
        """Volumes the claim could bind on some node: those pre-bound to it (which decide alone),
        then the unclaimed ones that suit it."""
        found = self._candidates_of.get(claim.key)
        if found is None:
            prebound = [v for v in self._by_claim.get(claim.key, ()) if v.storage_class == claim.storage_class]
            suiting = [v for v in prebound if _fits(v, claim)]
            # Without a pre-bound volume, the shared list itself (claims alike share it and its caches).
            found = suiting + self._unclaimed(claim) if suiting else self._unclaimed(claim)
            self._candidates_of[claim.key] = found
        return found

    def _unclaimed(self, claim: PersistentVolumeClaim) -> list[PersistentVolume]:
        """Unclaimed volumes that suit the claim, in snapshot order (cached per claim requirements)."""
        signature = (
            claim.storage_class,
            claim.request_bytes,
            claim.volume_mode,
            frozenset(claim.access_modes),
            claim.selector,
        )
        found = self._unclaimed_of.get(signature)
        if found is None:
            same_class = self._by_class.get(claim.storage_class, ())
            found = [v for v in same_class if v.claim is None and _could_suit(v, claim)]
            self._unclaimed_of[signature] = found
        return found

    @cached_property
    def _by_claim(self) -> dict[str, list[PersistentVolume]]:
        out: dict[str, list[PersistentVolume]] = {}
        for volume in self.snapshot.volumes:
            if volume.claim is not None:
                out.setdefault(volume.claim, []).append(volume)
        return out

    @cached_property
    def _by_class(self) -> dict[str, list[PersistentVolume]]:
        out: dict[str, list[PersistentVolume]] = {}
        for volume in self.snapshot.volumes:
            out.setdefault(volume.storage_class, []).append(volume)
        return out

    def _matching(self, volume: PersistentVolume) -> frozenset[str]:
        """Names of the nodes the volume's node affinity admits (cached per volume)."""
        found = self._affinity.get(volume.name)
        if found is None:
            terms = volume.node_affinity
            if terms is None:
                found = self._all_names
            elif not terms:
                found = frozenset()  # required with no terms: Kubernetes matches no node
            else:
                key = EligibilityKey(frozenset(), terms, _TOLERATE_ALL)
                # Not-Ready nodes fall out of the mask; they take no pod anyway (NodeNotReady comes first).
                found = frozenset(node.name for node in self._index.nodes_of(self._index.mask(key)))
            self._affinity[volume.name] = found
        return found

    @cached_property
    def _index(self) -> NodeIndex:
        return node_index(self.nodes)

    @cached_property
    def _all_names(self) -> frozenset[str]:
        return frozenset(node.name for node in self.nodes)

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

    def bind_plan(self, pod: Pod, node: Node, taken: AbstractSet[str] = frozenset()) -> VolumePlan | str:
        """What VolumeBinding's PreBind writes for the pod on the node, or why nothing works.

        The pod's unbound WaitForFirstConsumer claims, smallest first, each get the volume
        ``FindMatchingVolume`` picks on the node (the one pre-bound to the claim, else the smallest
        available one that suits it), never one in ``taken`` (volumes promised to pods bound just
        before) nor one an earlier claim got; the others are provisioned on the node. An empty plan
        when every claim is bound already.
        """
        claims = [claim for name in dict.fromkeys(pod.claims) if (claim := self.claim(pod, name)) is not None]
        if len(claims) < len(set(pod.claims)):
            return "persistentvolumeclaim not found"
        waiting = [claim for claim in claims if not claim.fully_bound]
        for claim in waiting:
            if not self._delayed(claim):
                return f"{UNBOUND_IMMEDIATE} (claim {claim.name})"
            if claim.selected_node is not None and claim.selected_node != node.name:
                return f"{BIND_CONFLICT} (claim {claim.name} is being provisioned for node {claim.selected_node})"
        chosen: set[str] = set(taken)
        bindings: list[tuple[PersistentVolumeClaim, PersistentVolume]] = []
        provisions: list[PersistentVolumeClaim] = []
        for claim in sorted(waiting, key=lambda c: c.request_bytes):
            volume = self._find_volume(claim, node, chosen) if claim.selected_node is None else None
            if volume is not None:
                chosen.add(volume.name)
                bindings.append((claim, volume))
            elif self._can_provision(claim, node):
                provisions.append(claim)
            else:
                return f"{BIND_CONFLICT} (claim {claim.name} on node {node.name})"
        return VolumePlan(tuple(bindings), tuple(provisions))

    def _find_volume(self, claim: PersistentVolumeClaim, node: Node, chosen: set[str]) -> PersistentVolume | None:
        """``FindMatchingVolume``: a volume pre-bound to the claim, else the smallest that fits."""
        best: PersistentVolume | None = None
        for volume in self._candidates(claim):
            if volume.name in chosen:
                continue
            fits_node = node.name in self._matching(volume)
            if volume.claim == claim.key:
                return volume if fits_node else None
            if fits_node and (best is None or volume.capacity_bytes < best.capacity_bytes):
                best = volume
        return best

    def _can_provision(self, claim: PersistentVolumeClaim, node: Node, *, capacity: bool = True) -> bool:
        storage_class = self.snapshot.storage_class_by_name.get(claim.storage_class)
        if storage_class is None or storage_class.provisioner in ("", NO_PROVISIONER):
            return False
        topologies = storage_class.allowed_topologies
        if topologies and not affinity_matches(topologies, node):
            return False
        return not capacity or self._has_capacity(claim, storage_class.name, storage_class.provisioner, node)

    def _has_capacity(self, claim: PersistentVolumeClaim, storage_class: str, provisioner: str, node: Node) -> bool:
        """VolumeBinding's storage-capacity check: for a CSI driver with ``storageCapacity: true``,
        some CSIStorageCapacity of the claim's class must reach the node (its ``nodeTopology``
        selects the node's labels) with room for the claim's request (``maximumVolumeSize``, else
        ``capacity``). Other provisioners are not checked."""
        driver = self.snapshot.csi_driver_by_name.get(provisioner)
        if driver is None or not driver.storage_capacity:
            return True
        for capacity in self._capacities.get(storage_class, ()):
            largest = capacity.largest_volume
            if largest is None or largest < claim.request_bytes:
                continue
            if capacity.node_topology is not None and capacity.node_topology.matches(node.labels):
                return True
        return False

    @cached_property
    def _capacities(self) -> dict[str, list[CSIStorageCapacity]]:
        out: dict[str, list[CSIStorageCapacity]] = {}
        for capacity in self.snapshot.storage_capacities:
            out.setdefault(capacity.storage_class, []).append(capacity)
        return out

    def _short_of_storage(self, claims: list[PersistentVolumeClaim]) -> frozenset[str]:
        """Nodes where some waiting claim could be provisioned but for storage capacity: refused
        with VolumeBinding's "did not have enough free storage" rather than its bind conflict."""
        if not self.snapshot.storage_capacities and not self.snapshot.csi_drivers:
            return frozenset()
        return frozenset(
            node.name
            for node in self.nodes
            for claim in claims
            if self._can_provision(claim, node, capacity=False) and not self._can_provision(claim, node)
        )

    def _zone_nodes(self, volume: PersistentVolume) -> frozenset[str]:
        """Nodes VolumeZone lets the volume's pods use (cached per volume): those with no zone or
        region label at all, and those matching each of the volume's zone and region labels."""
        found = self._zones.get(volume.name)
        if found is None:
            index = self._index
            unlabelled = index.all_mask
            for label in ZONE_LABELS:
                unlabelled &= ~index.key_mask(label)
            matching = index.all_mask
            for label in ZONE_LABELS:
                value = volume.labels.get(label)
                if value is None:
                    continue
                zones = {zone for zone in value.split("__") if zone}
                if not zones:
                    continue  # unparsable: Kubernetes ignores the label
                ga = _GA_LABEL.get(label, label)
                # The node's own label, else (a legacy volume label) the GA one.
                passes = index.label_mask(label, zones)
                if ga != label:
                    passes |= index.label_mask(ga, zones) & ~index.key_mask(label)
                matching &= passes
            found = frozenset(node.name for node in index.nodes_of(unlabelled | matching))
            self._zones[volume.name] = found
        return found

    # --- what changes as pods land: per-node counts as extra resources -------------------------

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
        """Unique CSI volumes the pods bound to the node use, with their drivers (cached per node)."""
        out = self._attached_of.get(node)
        if out is None:
            out = {}
            for pod in self.snapshot.pods_on_node.get(node, ()):
                out.update(self.csi_volumes(pod))
            self._attached_of[node] = out
        return out

    def _shared_volumes(self, pending: Sequence[Pod]) -> frozenset[str]:
        """CSI volumes of a limited driver whose cost depends on where other pods are: used by two
        or more pending pods, or by a pending pod and a pod bound on a node with a limit.

        NodeVolumeLimits counts unique volumes on a node: such a volume costs one attach slot on a
        node once, whichever of its pods lands there first, and none on a node that has it already.
        The model counts it with a boolean per (volume, node) (:mod:`vcsat.solver.constraints.attach`);
        a volume only one pending pod uses and no limited node holds is a plain per-pod request.
        """
        limited = self._limited_drivers
        if not limited:
            return frozenset()
        users: dict[str, int] = {}
        for pod in pending:
            for key, driver in self.csi_volumes(pod).items():
                if driver in limited:
                    users[key] = users.get(key, 0) + 1
        if not users:
            return frozenset()
        held: set[str] = set()
        for csinode in self.snapshot.csinodes:
            held.update(self.attached(csinode.name))
        return frozenset(key for key, count in users.items() if count > 1 or key in held)

    def shared_volumes(self, pod: Pod) -> frozenset[str]:
        """The pod's CSI volumes that are counted once per node (see :meth:`_shared_volumes`)."""
        if not self._shared:
            return frozenset()
        return frozenset(key for key in self.csi_volumes(pod) if key in self._shared)

    @property
    def shared(self) -> frozenset[str]:
        """Every shared CSI volume of the cycle (see :meth:`_shared_volumes`)."""
        return self._shared

    def requests(self, pod: Pod) -> dict[str, int]:
        """The pod's amounts of :meth:`resources`: its CSI volumes of each limited driver that no
        other pod shares (a shared one is counted once per node by the model, see
        :meth:`shared_volumes`; its driver's resource is listed with nothing of it), and its waiting
        claims of each local-volume class."""
        out: dict[str, int] = {}
        limited = self._limited_drivers
        for key, driver in self.csi_volumes(pod).items():
            if driver in limited:
                name = attachable_resource(driver)
                out[name] = out.get(name, 0) + (0 if key in self._shared else 1)
        for name in pod.claims:
            claim = self.claim(pod, name)
            if claim is not None and claim.key in self._local_claims:
                resource = local_volume_resource(claim.storage_class)
                out[resource] = out.get(resource, 0) + 1
        return out

    def room(self, node: Node, resource: str, unlimited: int) -> int:
        """What the node has left of one of :meth:`requests`' resources."""
        if resource.startswith(ATTACHABLE_PREFIX):
            driver = resource.removeprefix(ATTACHABLE_PREFIX)
            csinode = self.snapshot.csinode_by_name.get(node.name)
            limit = csinode.limits.get(driver) if csinode is not None else None
            if limit is None:
                return unlimited
            # Never below zero: a node over its limit still takes a pod that adds no volume of the driver.
            return max(0, limit - sum(1 for d in self.attached(node.name).values() if d == driver))
        storage_class = resource.removeprefix(LOCAL_PREFIX)
        if self._provisions(storage_class, node):
            return unlimited
        return self._local_room.get(storage_class, {}).get(node.name, 0)

    @cached_property
    def _limited_drivers(self) -> frozenset[str]:
        return frozenset(driver for csinode in self.snapshot.csinodes for driver in csinode.limits)

    def _provisions(self, storage_class_name: str, node: Node) -> bool:
        storage_class = self.snapshot.storage_class_by_name.get(storage_class_name)
        if storage_class is None or storage_class.provisioner in ("", NO_PROVISIONER):
            return False
        return not storage_class.allowed_topologies or affinity_matches(storage_class.allowed_topologies, node)

    def _local_classes(self, pending: Sequence[Pod]) -> None:
        """Classes whose waiting claims bind node-local volumes only: counted per node, exactly.

        A class is local when every available volume of it admits one node. Its waiting claims (not
        pre-bound, no node selected yet) then take one unit each of ``local-volumes-<class>`` on
        their node, and a node has as many units as it has available volumes of the class that suit
        every such claim (unbounded where the class's provisioner may create volumes). Distinct
        claims so get distinct volumes, whatever the solve picks. Other classes fall back to the
        queue-order rule of :meth:`_contended`.
        """
        waiting: dict[str, list[PersistentVolumeClaim]] = {}
        for pod in pending:
            for name in pod.claims:
                claim = self.claim(pod, name)
                if claim is None or claim.fully_bound or not self._delayed(claim) or claim.selected_node is not None:
                    continue
                if any(volume.storage_class == claim.storage_class for volume in self._by_claim.get(claim.key, ())):
                    continue
                waiting.setdefault(claim.storage_class, []).append(claim)
        for storage_class, claims in waiting.items():
            free = [
                v
                for v in self._by_class.get(storage_class, ())
                if v.claim is None and v.phase == "Available" and not v.deleting
            ]
            if any(len(self._matching(volume)) != 1 for volume in free):
                continue
            # One id set per distinct requirement (claims of one StatefulSet share theirs).
            suiting = list({frozenset(map(id, self._unclaimed(claim))): None for claim in claims})
            room: dict[str, int] = {}
            for volume in free:
                if all(id(volume) in ids for ids in suiting):
                    (node,) = self._matching(volume)
                    room[node] = room.get(node, 0) + 1
            self._local_room[storage_class] = room
            self._local_claims.update(claim.key for claim in claims)


def _fits(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """What ``FindMatchingVolume`` asks of any volume, the pre-bound one included."""
    return (
        volume.capacity_bytes >= claim.request_bytes and volume.volume_mode == claim.volume_mode and not volume.deleting
    )


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
    return NodeRestriction(frozenset(), (), (code, message))
