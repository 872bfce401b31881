"""The frozen cluster snapshot one scheduling cycle decides on.

These types are what the one converter (``vcsat.adapters.convert.snapshot``) makes of Kubernetes and
Volcano objects, for the live scheduler and for ``vcsat solve`` alike. They keep only what a
decision depends on, already in the exact integer units of :mod:`vcsat.model.resources`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from vcsat.model import resources as res
from vcsat.model.derived import derived
from vcsat.model.queue_rule import DEFAULT_QUEUE as DEFAULT_QUEUE  # the model's name for it, as before
from vcsat.model.queue_rule import queue_in
from vcsat.model.selectors import LabelSelector
from vcsat.model.spread import TopologySpreadConstraint


class Frozen(BaseModel):
    """Base of every model type: immutable, and strict about unknown fields.

    Values derived from the fields (:func:`~vcsat.model.derived.derived`) are kept in the
    instance once computed; a copy with fields changed (``model_copy(update=...)``) computes them
    again."""

    model_config = ConfigDict(frozen=True, extra="forbid", ignored_types=(derived,))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copied = super().model_copy(update=update, deep=deep)
        if update:
            fields = type(self).__pydantic_fields__
            values = copied.__dict__
            for name in [name for name in values if name not in fields]:
                del values[name]  # derived from the old fields
        return copied


TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(Frozen):
    key: str
    value: str = ""
    effect: TaintEffect


class Toleration(Frozen):
    key: str = ""
    """Empty with operator Exists tolerates every taint."""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: TaintEffect | Literal[""] = ""
    """Empty matches every effect."""


SelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


class NodeSelectorRequirement(Frozen):
    key: str
    operator: SelectorOperator
    values: tuple[str, ...] = ()


class NodeSelectorTerm(Frozen):
    """Requirements that must all hold (AND); a pod's terms are alternatives (OR)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()
    """Only the field ``metadata.name`` exists for nodes."""


class PreferredSchedulingTerm(Frozen):
    """One ``preferredDuringSchedulingIgnoredDuringExecution`` entry: nodes matching ``preference``
    score ``weight`` (1 to 100) more for the pod (kube-scheduler's NodeAffinity score)."""

    weight: int
    preference: NodeSelectorTerm


class Node(Frozen):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    allocatable: dict[str, int] = Field(default_factory=dict)
    """Solver units per resource; ``pods`` is the pods limit."""
    gpu_topology: str | None = None
    """The raw ``vcsat.io/gpu-topology`` annotation (node-link JSON or ``preset:<name>``)."""

    @derived
    def gpus(self) -> int:
        return self.allocatable.get(res.GPU, 0)

    @property
    def schedulable(self) -> bool:
        """Whether anything new may land here at all (cordon and readiness)."""
        return self.ready and not self.unschedulable


PodPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]


class PodAffinityTerm(Frozen):
    """One ``podAffinityTerm``: the pods it selects, and the topology domain they are counted in.

    The converter has already merged ``matchLabelKeys`` (``key In [own value]``) and
    ``mismatchLabelKeys`` (``key NotIn [own value]``) into :attr:`label_selector`, as kube-apiserver
    does on pod creation; the key lists are kept for the record."""

    label_selector: LabelSelector | None = None
    """None selects no pod (a term without ``labelSelector``)."""
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    """None: no namespaces by labels. Neither this nor :attr:`namespaces`: the pod's own namespace."""
    topology_key: str
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


class WeightedPodAffinityTerm(Frozen):
    weight: int
    """1..100, as ``preferredDuringSchedulingIgnoredDuringExecution`` allows."""
    term: PodAffinityTerm


class PodAffinityRules(Frozen):
    """``podAffinity`` or ``podAntiAffinity``: required terms (all must hold) and preferred ones."""

    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()

    @derived
    def empty(self) -> bool:
        # Derived, not a property: asked of every bound pod's two rules by each inter-pod scan (143,000
        # times a 10k cycle), and the pods without rules share one rules object.
        return not self.required and not self.preferred


HostPort = tuple[str, str, int]
"""(protocol, hostIP, hostPort) as kube-scheduler's NodePorts sees it: protocol ``TCP`` when unset,
hostIP ``0.0.0.0`` (every address) when unset."""


class Pod(Frozen):
    namespace: str
    name: str
    uid: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    managed: bool = True
    """Whether the pod's schedulerName is ours; pods of other schedulers are only load."""
    node_name: str | None = None
    phase: PodPhase = "Pending"
    requests: dict[str, int] = Field(default_factory=dict)
    """As Kubernetes counts them (containers summed, max with each init container, plus
    overhead), in exact model units, with ``pods: 1`` included."""
    priority: int = 0
    priority_class: str = ""
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: tuple[NodeSelectorTerm, ...] = ()
    """Required node affinity terms (OR); empty means no requirement."""
    tolerations: tuple[Toleration, ...] = ()
    terminating: bool = False
    """``metadata.deletionTimestamp`` is set: still holds its room, is never a victim."""
    group: str | None = None
    """``namespace/name`` of its PodGroup; None for a pod that is a gang of its own."""
    task: str = ""
    """``volcano.sh/task-spec``: the task the pod belongs to, for ``minTaskMember``."""
    preemptable: bool = True
    gpu_ids: tuple[int, ...] | None = None
    """``vcsat.io/gpu-ids`` on a bound pod: the device indices it holds."""
    nominated_node: str | None = None
    """``status.nominatedNodeName``: a node where it waits for preemption victims to go."""
    created: float = 0.0
    """Creation time as epoch seconds: FIFO order, and younger victims go first."""
    claims: tuple[str, ...] = ()
    """Names of the PersistentVolumeClaims (in its namespace) its volumes use, in ``spec.volumes``
    order: ``persistentVolumeClaim.claimName``, and ``<pod>-<volume>`` for a generic ephemeral volume."""
    scheduling_gates: tuple[str, ...] = ()
    """``spec.schedulingGates`` names: while any is there the pod is not placed (kube-scheduler's
    ``SchedulingGated``), and it counts for no gang's ``minMember``."""
    resource_claims: tuple[str, ...] = ()
    """``spec.resourceClaims`` names (dynamic resource allocation): vcsat does not model devices
    claimed this way, so such a pod is never placed, and its gang says why."""
    queue_name: str | None = None
    """``scheduling.volcano.sh/queue-name``: the queue of a pod without a PodGroup (``default`` when
    unset, as Volcano's PodGroup controller makes it); ignored for a pod in a PodGroup."""
    preferred_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    """Preferred node affinity terms: a score, never a filter (see :mod:`vcsat.solver.rules.preferences`)."""
    pod_affinity: PodAffinityRules = PodAffinityRules()
    pod_anti_affinity: PodAffinityRules = PodAffinityRules()
    host_ports: tuple[HostPort, ...] = ()
    """Container ports with ``hostPort`` > 0, of the containers and of the sidecar (restartable)
    init containers: the ports kube-scheduler counts as taken on the node."""
    spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    """``spec.topologySpreadConstraints``, both DoNotSchedule and ScheduleAnyway."""

    @derived
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @derived
    def held(self) -> bool:
        """Whether something other than room keeps the pod from being placed (gates, claims)."""
        return bool(self.scheduling_gates or self.resource_claims)

    @derived
    def finished(self) -> bool:
        return self._states()[0]

    @derived
    def bound(self) -> bool:
        """Bound and not finished: it holds room on its node."""
        return self._states()[1]

    @derived
    def gang_ready(self) -> bool:
        """Counts toward its gang's minMember without being placed again: bound and not finished, or
        bound and Succeeded (Volcano's ready tasks: a peer that finished its work keeps its place,
        so a finished pod deleted and made again before its job completed can rejoin its gang)."""
        return self._states()[2]

    @derived
    def pending(self) -> bool:
        """Waiting for a node and ours to place."""
        return self._states()[3]

    def _states(self) -> tuple[bool, bool, bool, bool]:
        """``finished``, ``bound``, ``gang_ready`` and ``pending``, made and kept together: a cycle
        reads most of them for most pods, so the first read of one keeps the other three."""
        node_name, phase = self.node_name, self.phase
        finished = phase in ("Succeeded", "Failed")
        states = (
            finished,
            node_name is not None and not finished,
            node_name is not None and phase != "Failed",
            self.managed and node_name is None and not finished and not self.terminating,
        )
        values = self.__dict__
        values["finished"], values["bound"], values["gang_ready"], values["pending"] = states
        return states

    @derived
    def gpus(self) -> int:
        return self.requests.get(res.GPU, 0)

    @derived
    def gpu_milli(self) -> int:
        return self.requests.get(res.GPU_MILLI, 0)


class NetworkTopology(Frozen):
    mode: Literal["hard", "soft"] = "hard"
    highest_tier_allowed: int | None = None


class PodGroup(Frozen):
    namespace: str
    name: str
    min_member: int = 1
    min_task_member: dict[str, int] = Field(default_factory=dict)
    queue: str = "default"
    priority: int = 0
    priority_class: str = ""
    min_resources: dict[str, int] = Field(default_factory=dict)
    network_topology: NetworkTopology | None = None
    phase: str = ""
    """``status.phase`` as last written (Pending, Inqueue, Running, ...)."""
    created: float = 0.0
    inqueue_since: float | None = None
    """Epoch seconds at which it became ``Inqueue`` (the ``lastTransitionTime`` of its ``Inqueued``
    condition, which vcsat writes on admission); None when not Inqueue or not recorded. With the
    snapshot's ``now`` it drives enqueue's ``InqueueTimeout`` (``Policy.inqueue_timeout_s``)."""
    scheduler_name: str | None = None
    """Annotation ``vcsat.io/scheduler-name``: the scheduler meant to admit it while it has no pods
    yet (its Job's schedulerName, written by the Job controller)."""

    @derived
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class Queue(Frozen):
    name: str
    weight: int = 1
    capability: dict[str, int] | None = None
    """Hard cap on what the queue's pods hold; None means unbounded."""
    deserved: dict[str, int] | None = None
    guarantee: dict[str, int] = Field(default_factory=dict)
    reclaimable: bool = True
    parent: str | None = None
    open: bool = True
    """False for ``status.state: Closed``: nothing new is placed for it."""
    priority: int = 0
    """``spec.priority`` (Volcano v1.10+): when the cluster cannot serve every queue, queues of higher
    priority have their deserved shares served first; equal priorities fall back to the proportional
    order. A queue's own value counts, never its parent's (Volcano compares the queues' own
    ``spec.priority``, also in a hierarchy). It orders, it grants nothing: no queue is given more
    than its deserved share for it, and reclaim still takes only from queues above their share,
    lowest priority first."""


class HyperNodeMember(Frozen):
    type: Literal["Node", "HyperNode"]
    exact_name: str | None = None
    regex: str | None = None
    labels: dict[str, str] | None = None


class HyperNode(Frozen):
    name: str
    tier: int
    members: tuple[HyperNodeMember, ...] = ()


# The storage and disruption types build on Frozen and NodeSelectorTerm above.
from vcsat.model.disruption import PodDisruptionBudget  # noqa: E402
from vcsat.model.storage import (  # noqa: E402
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)


class Notice(Frozen):
    """Something in the input that the converter tolerated (a live cluster, a cluster dump) but that
    keeps work from running or changes a decision, said once per object: the live scheduler logs it
    and records an Event on the object, ``vcsat solve`` prints it on stderr."""

    kind: Literal["Node", "Pod", "PodGroup"]
    key: str
    """The object: a node's name, ``namespace/name`` otherwise."""
    reason: str
    """Machine-readable: ``QueueNotFound``, ``PodGroupNotFound``, ``InvalidGpuTopology``,
    ``SubGroupPolicyIgnored``."""
    message: str

    def __str__(self) -> str:
        return f"{self.kind} {self.key}: {self.reason}: {self.message}"


class Snapshot(Frozen):
    """Everything one cycle decides on. Generation-stamped so a stale decision can be told."""

    nodes: tuple[Node, ...] = ()
    pods: tuple[Pod, ...] = ()
    podgroups: tuple[PodGroup, ...] = ()
    queues: tuple[Queue, ...] = ()
    """Always holds the queue ``default`` (the converter adds it when not listed)."""
    hypernodes: tuple[HyperNode, ...] = ()
    namespaces: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Namespace name -> its labels, for ``namespaceSelector``; a namespace not listed has none."""
    generation: int = 0
    now: float | None = None
    """The cycle's clock in epoch seconds: the live scheduler's wall clock when it converted the
    objects, recorded in its dumps (``vcsat.io/now`` on the instance List), so that an offline
    ``vcsat solve`` decides exactly as the live cycle did. None (no clock): nothing times out."""
    claims: tuple[PersistentVolumeClaim, ...] = ()
    volumes: tuple[PersistentVolume, ...] = ()
    storage_classes: tuple[StorageClass, ...] = ()
    csinodes: tuple[CSINode, ...] = ()
    csi_drivers: tuple[CSIDriver, ...] = ()
    storage_capacities: tuple[CSIStorageCapacity, ...] = ()
    disruption_budgets: tuple[PodDisruptionBudget, ...] = ()
    notices: tuple[Notice, ...] = ()
    """What the converter tolerated but must not stay silent about (see :class:`Notice`)."""

    @cached_property
    def node_by_name(self) -> dict[str, Node]:
        return {node.name: node for node in self.nodes}

    @cached_property
    def pod_by_key(self) -> dict[str, Pod]:
        return {pod.key: pod for pod in self.pods}

    @cached_property
    def podgroup_by_key(self) -> dict[str, PodGroup]:
        return {group.key: group for group in self.podgroups}

    @cached_property
    def queue_by_name(self) -> dict[str, Queue]:
        return {queue.name: queue for queue in self.queues}

    @cached_property
    def pods_on_node(self) -> dict[str, tuple[Pod, ...]]:
        """Pods that hold room, per node name (finished pods hold nothing)."""
        out: dict[str, list[Pod]] = {}
        for pod in self.pods:
            if pod.bound and pod.node_name is not None:
                out.setdefault(pod.node_name, []).append(pod)
        return {name: tuple(pods) for name, pods in out.items()}

    def queue_of(self, pod: Pod) -> str | None:
        """The queue a pod's room counts against: its PodGroup's queue; for a pod of ours without a
        PodGroup its ``scheduling.volcano.sh/queue-name`` annotation, else ``default``; None for
        pods of other schedulers, which belong to no queue."""
        return queue_in(pod, self.podgroup_by_key)

    @cached_property
    def claim_by_key(self) -> dict[str, PersistentVolumeClaim]:
        return {claim.key: claim for claim in self.claims}

    @cached_property
    def volume_by_name(self) -> dict[str, PersistentVolume]:
        return {volume.name: volume for volume in self.volumes}

    @cached_property
    def storage_class_by_name(self) -> dict[str, StorageClass]:
        return {storage_class.name: storage_class for storage_class in self.storage_classes}

    @cached_property
    def csinode_by_name(self) -> dict[str, CSINode]:
        return {csinode.name: csinode for csinode in self.csinodes}

    @cached_property
    def csi_driver_by_name(self) -> dict[str, CSIDriver]:
        return {driver.name: driver for driver in self.csi_drivers}

    @cached_property
    def pods_of_group(self) -> dict[str, tuple[Pod, ...]]:
        out: dict[str, list[Pod]] = {}
        for pod in self.pods:
            if pod.group is not None:
                out.setdefault(pod.group, []).append(pod)
        return {key: tuple(pods) for key, pods in out.items()}
