"""Storage objects a pod's volumes depend on: claims, volumes, classes and per-node CSI limits.

kube-scheduler's volume plugins (VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits)
decide where a pod with PersistentVolumeClaims may run from these objects; the converter
(``vcsat.adapters.convert.snapshot``) keeps only the fields those plugins read. Storage sizes are bytes,
rounded the safe way (a claim's request up, a volume's capacity down), so a volume that is big
enough here is big enough in Kubernetes.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from vcsat.model.cluster import Frozen, NodeSelectorTerm
from vcsat.model.selectors import LabelSelector

READ_WRITE_ONCE_POD: Final = "ReadWriteOncePod"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
BindingMode = Literal["Immediate", "WaitForFirstConsumer"]
VolumeMode = Literal["Filesystem", "Block"]


class PersistentVolumeClaim(Frozen):
    namespace: str
    name: str
    storage_class: str = ""
    """``spec.storageClassName`` (the beta annotation first, as Kubernetes reads it); empty: none."""
    volume_name: str = ""
    """``spec.volumeName``: the PV it is bound (or pre-bound) to; empty while unbound."""
    bind_completed: bool = False
    """Annotation ``pv.kubernetes.io/bind-completed``: with a volume name, the claim is fully bound."""
    access_modes: tuple[str, ...] = ()
    request_bytes: int = 0
    """``spec.resources.requests.storage`` in bytes, rounded up."""
    volume_mode: VolumeMode = "Filesystem"
    selector: LabelSelector | None = None
    """``spec.selector``: labels a volume must carry to be bound to it; None: any volume."""
    lost: bool = False
    """``status.phase: Lost``: its volume is gone."""
    deleting: bool = False
    """``metadata.deletionTimestamp`` is set."""
    selected_node: str | None = None
    """Annotation ``volume.kubernetes.io/selected-node``: provisioning already chose this node."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def fully_bound(self) -> bool:
        return bool(self.volume_name) and self.bind_completed


class PersistentVolume(Frozen):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    storage_class: str = ""
    capacity_bytes: int = 0
    """``spec.capacity.storage`` in bytes, rounded down."""
    access_modes: tuple[str, ...] = ()
    volume_mode: VolumeMode = "Filesystem"
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None
    """``spec.nodeAffinity.required.nodeSelectorTerms`` (OR'd); None when not given (any node)."""
    claim: str | None = None
    """``spec.claimRef`` as ``namespace/name``; None when unclaimed."""
    phase: str = "Available"
    deleting: bool = False
    csi_driver: str = ""
    """``spec.csi.driver``; empty for a volume of no CSI driver."""
    csi_handle: str = ""
    """``spec.csi.volumeHandle``."""


class StorageClass(Frozen):
    name: str
    provisioner: str = ""
    binding_mode: BindingMode = "Immediate"
    allowed_topologies: tuple[NodeSelectorTerm, ...] = ()
    """``allowedTopologies`` (terms OR'd, each an AND of ``In`` requirements); empty: everywhere."""


class CSIDriver(Frozen):
    name: str
    """The driver's name, as a StorageClass's ``provisioner`` names it."""
    storage_capacity: bool = False
    """``spec.storageCapacity``: VolumeBinding provisions for it only where a CSIStorageCapacity
    object reports enough room (:class:`CSIStorageCapacity`)."""


class CSIStorageCapacity(Frozen):
    """What a CSI driver reports it can still provision for one StorageClass in one topology
    segment (storage.k8s.io/v1 ``CSIStorageCapacity``)."""

    namespace: str
    name: str
    storage_class: str
    """``storageClassName``."""
    node_topology: LabelSelector | None = None
    """``nodeTopology``: the nodes that reach this storage; None (absent) reaches no node."""
    capacity_bytes: int | None = None
    """``capacity`` in bytes (rounded up, as Kubernetes reads a quantity's value); None: unknown."""
    maximum_volume_size_bytes: int | None = None
    """``maximumVolumeSize`` in bytes; when given it decides instead of ``capacity``."""

    @property
    def largest_volume(self) -> int | None:
        """The largest volume it can provision: ``maximumVolumeSize`` if given, else ``capacity``."""
        return self.maximum_volume_size_bytes if self.maximum_volume_size_bytes is not None else self.capacity_bytes


class CSINode(Frozen):
    name: str
    """Equal to its node's name."""
    limits: dict[str, int] = Field(default_factory=dict)
    """Per CSI driver with ``allocatable.count``: how many unique volumes of it the node may attach."""
