"""Small builders for hand-made snapshots and decisions, in the words a test reads best.

They construct model objects directly (no loader, no Kubernetes objects), so a test states only
what it is about and everything else takes a plain default::

    snap = snapshot(
        nodes=[node("n1", cpu="8", memory="32Gi", gpus=8, labels={"zone": "a"}, taints=["gpu:NoSchedule"])],
        pods=[pod("ns/p", cpu="1", gpus=1, group="ns/g", tolerations=["gpu"])],
        groups=[group("ns/g", min_member=1, queue="q")],
        queues=[queue("q", capability={"cpu": "4"})],
    )
    dec = decision(snap, bindings=[bind("ns/p", "n1", gpus=[0])])   # podgroups filled in to match

Quantities are Kubernetes strings or plain numbers in the Kubernetes unit (``cpu=0.5`` is 500m,
``memory=512`` is 512Mi, ``memory="1G"`` is 10^9 bytes); amounts are the model's exact integers
(cpu millicores, bytes, counts), a fraction of the unit rounded up as kube-scheduler rounds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal, cast

from vcsat.model import (
    Binding,
    Decision,
    Eviction,
    HyperNode,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Nomination,
    Pod,
    PodGroup,
    PodGroupOutcome,
    Queue,
    Snapshot,
    SolverStats,
    Taint,
    Toleration,
)
from vcsat.model import resources as res
from vcsat.model.cluster import DEFAULT_QUEUE, PodPhase, TaintEffect
from vcsat.model.decision import PodGroupPhase, SolverStatus
from vcsat.model.disruption import PodDisruptionBudget
from vcsat.model.selectors import LabelRequirement, label_selector
from vcsat.model.spread import TopologySpreadConstraint
from vcsat.model.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)

Quantity = str | int | float
_SUFFIX = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
}
_QUANTITY = re.compile(r"([0-9.]+)([a-zA-Z]*)")


def units(resource: str, amount: Quantity, *, round_up: bool = True) -> int:
    """A quantity in the model's exact units: cpu millicores, byte resources bytes, the rest counts.

    Strings are Kubernetes quantities (``"500m"``, ``"2Gi"``, ``"1G"``); bare numbers are in the
    Kubernetes unit, except that bytes are MiB for brevity (``memory=512`` is 512Mi). A fraction of
    the unit rounds up, as kube-scheduler rounds (``round_up=False``: down)."""
    if isinstance(amount, str):
        match = _QUANTITY.fullmatch(amount.strip())
        if match is None or match.group(2) not in _SUFFIX:
            raise ValueError(f"not a quantity: {amount!r}")
        value = Fraction(Decimal(match.group(1))) * _SUFFIX[match.group(2)]
    else:
        value = Fraction(Decimal(str(amount)))
        if res.is_byte_resource(resource):
            value *= res.MIB
    if resource in res.MILLI_UNIT_RESOURCES:
        value *= 1000
    whole = value.numerator // value.denominator
    return whole + 1 if round_up and whole != value else whole


def vector(amounts: Mapping[str, Quantity] | None, *, round_up: bool = True) -> dict[str, int]:
    return {name: units(name, amount, round_up=round_up) for name, amount in (amounts or {}).items()}


def split(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace or "default", name


# --- taints, tolerations, affinity ----------------------------------------------------------


def taint(text: str | Taint) -> Taint:
    """``"key=value:Effect"`` or ``"key:Effect"``."""
    if isinstance(text, Taint):
        return text
    spec, _, effect = text.rpartition(":")
    key, _, value = spec.partition("=")
    return Taint(key=key, value=value, effect=cast(TaintEffect, effect))


def toleration(text: str | Toleration) -> Toleration:
    """``"key=value:Effect"`` (Equal), ``"key:Effect"`` / ``"key"`` (Exists), ``"*"`` (all);
    ``:Effect`` may be left off to match every effect."""
    if isinstance(text, Toleration):
        return text
    if text == "*":
        return Toleration(operator="Exists")
    spec, _, effect = text.partition(":")
    key, equal, value = spec.partition("=")
    operator: Literal["Equal", "Exists"] = "Equal" if equal else "Exists"
    return Toleration(key=key, operator=operator, value=value, effect=cast(TaintEffect, effect))


_EXPR = re.compile(r"\s*(!?)([\w./-]+)\s*(?:(in|notin)\s*\(([^)]*)\)|([<>])\s*(\S+))?\s*")


def expr(text: str | NodeSelectorRequirement) -> NodeSelectorRequirement:
    """A requirement as kubectl writes selectors: ``zone in (a, b)``, ``zone notin (c)``,
    ``disk`` (Exists), ``!disk`` (DoesNotExist), ``cores > 4`` (Gt), ``cores < 8`` (Lt)."""
    if isinstance(text, NodeSelectorRequirement):
        return text
    match = _EXPR.fullmatch(text)
    if match is None:
        raise ValueError(f"not a requirement: {text!r}")
    bang, key, word, listed, sign, number = match.groups()
    if word:
        values = tuple(v.strip() for v in listed.split(",") if v.strip())
        return NodeSelectorRequirement(key=key, operator="In" if word == "in" else "NotIn", values=values)
    if sign:
        return NodeSelectorRequirement(key=key, operator="Gt" if sign == ">" else "Lt", values=(number,))
    return NodeSelectorRequirement(key=key, operator="DoesNotExist" if bang else "Exists")


def term(*requirements: str | NodeSelectorRequirement, fields: Iterable[str] = ()) -> NodeSelectorTerm:
    """One node selector term (its requirements AND'd). ``fields`` are ``metadata.name``
    requirements written like expressions: ``"metadata.name in (n1)"``."""
    return NodeSelectorTerm(
        match_expressions=tuple(expr(r) for r in requirements),
        match_fields=tuple(expr(f) for f in fields),
    )


Affinity = Iterable[NodeSelectorTerm | str] | NodeSelectorTerm | str
"""Required node affinity: terms (OR'd), or one term, or one requirement string."""


def _terms(affinity: Affinity) -> tuple[NodeSelectorTerm, ...]:
    if isinstance(affinity, NodeSelectorTerm | str):
        affinity = [affinity]
    return tuple(t if isinstance(t, NodeSelectorTerm) else term(t) for t in affinity)


# --- cluster objects --------------------------------------------------------------------------


def node(
    name: str,
    cpu: Quantity = "8",
    memory: Quantity = "32Gi",
    gpus: int = 0,
    pods: int = 110,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[str | Taint] = (),
    unschedulable: bool = False,
    ready: bool = True,
    extra: Mapping[str, Quantity] | None = None,
    gpu_topology: str | None = None,
    cpu_milli: int | None = None,
    memory_mib: int | None = None,
) -> Node:
    """A node; ``cpu_milli`` / ``memory_mib`` give the amounts in millicores / MiB instead."""
    allocatable = {
        res.CPU: units(res.CPU, cpu) if cpu_milli is None else cpu_milli,
        res.MEMORY: units(res.MEMORY, memory) if memory_mib is None else memory_mib * res.MIB,
        res.PODS: pods,
    }
    if gpus:
        allocatable[res.GPU] = gpus
    allocatable.update(vector(extra))
    return Node(
        name=name,
        labels=dict(labels or {}),
        taints=tuple(taint(t) for t in taints),
        unschedulable=unschedulable,
        ready=ready,
        allocatable=allocatable,
        gpu_topology=gpu_topology,
    )


def pod(
    key: str,
    cpu: Quantity = "1",
    memory: Quantity = "1Gi",
    gpus: int = 0,
    *,
    gpu_milli: int = 0,
    group: str | None = None,
    task: str = "",
    node: str | None = None,
    priority: int = 0,
    priority_class: str = "",
    phase: PodPhase | None = None,
    managed: bool = True,
    selector: Mapping[str, str] | None = None,
    affinity: Affinity = (),
    tolerations: Iterable[str | Toleration] = (),
    terminating: bool = False,
    preemptable: bool = True,
    gpu_ids: Sequence[int] | None = None,
    extra: Mapping[str, Quantity] | None = None,
    created: float = 0.0,
    cpu_milli: int | None = None,
    memory_mib: int | None = None,
    nominated_node: str | None = None,
    labels: Mapping[str, str] | None = None,
    claims: Sequence[str] = (),
    gates: Sequence[str] = (),
    resource_claims: Sequence[str] = (),
    queue_name: str | None = None,
    spread: Iterable[TopologySpreadConstraint] = (),
) -> Pod:
    """A pod ``namespace/name``; bound (phase Running) when ``node`` is given, else Pending.
    A string ``affinity`` is one term of one requirement (``"zone in (a)"``); ``cpu_milli`` /
    ``memory_mib`` give the requests in millicores / MiB instead. ``pods: 1`` is always requested.
    ``nominated_node`` is ``status.nominatedNodeName``: where it waits for preemption victims;
    ``claims`` the PersistentVolumeClaims its volumes use, ``gates`` its ``spec.schedulingGates``,
    ``resource_claims`` its ``spec.resourceClaims``, ``queue_name`` its
    ``scheduling.volcano.sh/queue-name`` annotation."""
    namespace, name = split(key)
    requests = {
        res.CPU: units(res.CPU, cpu) if cpu_milli is None else cpu_milli,
        res.MEMORY: units(res.MEMORY, memory) if memory_mib is None else memory_mib * res.MIB,
        res.PODS: 1,
    }
    if gpus:
        requests[res.GPU] = gpus
    if gpu_milli:
        requests[res.GPU_MILLI] = gpu_milli
    requests.update(vector(extra))
    return Pod(
        namespace=namespace,
        name=name,
        uid=f"uid-{namespace}-{name}",
        labels=dict(labels or {}),
        managed=managed,
        node_name=node,
        phase=phase or ("Running" if node else "Pending"),
        requests={k: v for k, v in requests.items() if v},
        priority=priority,
        priority_class=priority_class,
        node_selector=dict(selector or {}),
        affinity=_terms(affinity),
        tolerations=tuple(toleration(t) for t in tolerations),
        terminating=terminating,
        group=group,
        task=task,
        preemptable=preemptable,
        gpu_ids=None if gpu_ids is None else tuple(gpu_ids),
        nominated_node=nominated_node,
        created=created,
        claims=tuple(claims),
        scheduling_gates=tuple(gates),
        resource_claims=tuple(resource_claims),
        queue_name=queue_name,
        spread_constraints=tuple(spread),
    )


def spread(
    key: str = "zone",
    max_skew: int = 1,
    match: Mapping[str, str] | None = None,
    *,
    anyway: bool = False,
    min_domains: int = 1,
    affinity_policy: Literal["Honor", "Ignore"] = "Honor",
    taints_policy: Literal["Honor", "Ignore"] = "Ignore",
    match_label_keys: Sequence[str] = (),
    expressions: Sequence[LabelRequirement] = (),
) -> TopologySpreadConstraint:
    """A topology spread constraint over ``key`` whose labelSelector is ``match`` (matchLabels)."""
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable="ScheduleAnyway" if anyway else "DoNotSchedule",
        selector=label_selector(dict(match or {}), tuple(expressions)),
        min_domains=min_domains,
        node_affinity_policy=affinity_policy,
        node_taints_policy=taints_policy,
        match_label_keys=tuple(match_label_keys),
    )


def group(
    key: str,
    min_member: int = 1,
    queue: str = DEFAULT_QUEUE,
    *,
    min_task_member: Mapping[str, int] | None = None,
    priority: int = 0,
    priority_class: str = "",
    min_resources: Mapping[str, Quantity] | None = None,
    created: float = 0.0,
    phase: str = "",
) -> PodGroup:
    """A PodGroup; ``phase`` is its ``status.phase`` as last written (``""`` is Pending)."""
    namespace, name = split(key)
    return PodGroup(
        namespace=namespace,
        name=name,
        min_member=min_member,
        min_task_member=dict(min_task_member or {}),
        queue=queue,
        priority=priority,
        priority_class=priority_class,
        min_resources=vector(min_resources),
        created=created,
        phase=phase,
    )


def gangs(
    prefix: str,
    count: int = 1,
    *,
    queue: str = DEFAULT_QUEUE,
    size: int = 1,
    min_member: int | None = None,
    priority: int = 0,
    node: str | None = None,
    created: float = 0.0,
    namespace: str = "ns",
    phase: str | None = None,
    **pod_kwargs: Any,
) -> tuple[list[Pod], list[PodGroup]]:
    """``count`` jobs: PodGroups ``<namespace>/<prefix>-<j>`` of ``size`` pods ``<...>-<j>-<i>``
    each, in ``queue`` at ``priority``, running on ``node`` (PodGroup phase Running) when it is
    given, else pending (PodGroup phase ``phase``: ``""``, i.e. Pending, unless given; ``"Inqueue"``
    for a group admitted in an earlier cycle). Job ``j`` and its pods are created at ``created + j``
    (FIFO order, and younger victims go first); ``min_member`` defaults to ``size``; ``pod_kwargs``
    go to every :func:`pod` (``cpu="2"``, ...)."""
    pods: list[Pod] = []
    groups: list[PodGroup] = []
    for j in range(count):
        key = f"{namespace}/{prefix}-{j}"
        minimum = size if min_member is None else min_member
        status = phase if phase is not None else ("Running" if node is not None else "")
        groups.append(group(key, minimum, queue, priority=priority, created=created + j, phase=status))
        for i in range(size):
            pods.append(pod(f"{key}-{i}", group=key, priority=priority, node=node, created=created + j, **pod_kwargs))
    return pods, groups


def queue(
    name: str,
    *,
    weight: int = 1,
    capability: Mapping[str, Quantity] | None = None,
    deserved: Mapping[str, Quantity] | None = None,
    guarantee: Mapping[str, Quantity] | None = None,
    reclaimable: bool = True,
    parent: str | None = None,
    open: bool = True,
) -> Queue:
    return Queue(
        name=name,
        weight=weight,
        capability=None if capability is None else vector(capability, round_up=False),
        deserved=None if deserved is None else vector(deserved, round_up=False),
        guarantee=vector(guarantee, round_up=False),
        reclaimable=reclaimable,
        parent=parent,
        open=open,
    )


def snapshot(
    nodes: Iterable[Node] = (),
    pods: Iterable[Pod] = (),
    groups: Iterable[PodGroup] = (),
    queues: Iterable[Queue] = (),
    *,
    generation: int = 0,
    claims: Iterable[PersistentVolumeClaim] = (),
    volumes: Iterable[PersistentVolume] = (),
    storage_classes: Iterable[StorageClass] = (),
    csinodes: Iterable[CSINode] = (),
    disruption_budgets: Iterable[PodDisruptionBudget] = (),
    csi_drivers: Iterable[CSIDriver] = (),
    storage_capacities: Iterable[CSIStorageCapacity] = (),
    hypernodes: Iterable[HyperNode] = (),
) -> Snapshot:
    """A snapshot; the queue ``default`` is added when not given, as the converter does. Storage
    objects and budgets: see ``tests/storage_builders.py``."""
    queue_list = list(queues)
    if all(q.name != DEFAULT_QUEUE for q in queue_list):
        queue_list.insert(0, Queue(name=DEFAULT_QUEUE))
    return Snapshot(
        nodes=tuple(nodes),
        pods=tuple(pods),
        podgroups=tuple(groups),
        queues=tuple(queue_list),
        generation=generation,
        claims=tuple(claims),
        volumes=tuple(volumes),
        storage_classes=tuple(storage_classes),
        csinodes=tuple(csinodes),
        disruption_budgets=tuple(disruption_budgets),
        csi_drivers=tuple(csi_drivers),
        storage_capacities=tuple(storage_capacities),
        hypernodes=tuple(hypernodes),
    )


# --- decisions --------------------------------------------------------------------------------


def bind(pod_key: str, node_name: str, gpus: Sequence[int] = ()) -> Binding:
    return Binding(pod=pod_key, node=node_name, gpus=list(gpus))


def nominate(pod_key: str, node_name: str, gpus: Sequence[int] = ()) -> Nomination:
    return Nomination(pod=pod_key, node=node_name, gpus=list(gpus))


def evict(pod_key: str, reason: Literal["preempt", "reclaim"] = "preempt") -> Eviction:
    return Eviction(pod=pod_key, reason=reason)


def outcome(key: str, phase: PodGroupPhase = "Running", reason: str = "", message: str = "") -> PodGroupOutcome:
    return PodGroupOutcome(podgroup=key, phase=phase, reason=reason, message=message)


def outcomes_for(snap: Snapshot, placed_pods: Iterable[str], *, reason: str = "Unschedulable") -> list[PodGroupOutcome]:
    """One entry per gang with pending pods, in key order: Running when any of its pods is in
    ``placed_pods``, else Pending with ``reason``."""
    placed = set(placed_pods)
    gangs: dict[str, bool] = {}
    for p in snap.pods:
        if p.pending:
            key = p.group if p.group is not None else p.key
            gangs[key] = gangs.get(key, False) or p.key in placed
    return [
        outcome(key) if running else outcome(key, "Pending", reason, f"{key} waits")
        for key, running in sorted(gangs.items())
    ]


def decision(
    snap: Snapshot | None = None,
    *,
    bindings: Iterable[Binding] = (),
    nominations: Iterable[Nomination] = (),
    evictions: Iterable[Eviction] = (),
    podgroups: Iterable[PodGroupOutcome] | None = None,
    status: SolverStatus = "OPTIMAL",
    objective: float = 0.0,
    bound: float | None = None,
) -> Decision:
    """A decision; with ``snap`` given and ``podgroups`` left out, the podgroup entries are made
    to agree with the placements (:func:`outcomes_for`)."""
    bindings, nominations = list(bindings), list(nominations)
    if podgroups is None:
        placed = [b.pod for b in bindings] + [n.pod for n in nominations]
        podgroups = outcomes_for(snap, placed) if snap is not None else []
    return Decision(
        bindings=bindings,
        nominations=nominations,
        evictions=list(evictions),
        podgroups=list(podgroups),
        solver=SolverStats(
            status=status,
            objective=objective,
            bound=objective if bound is None else bound,
        ),
    )
