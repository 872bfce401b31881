"""Large, realistic cluster instances, made up deterministically from a seed.

Tests and benchmarks need clusters of a thousand nodes and more that look like a production GPU
cluster dumped with ``kubectl get ... -o yaml`` (contract §1), not toy rows: racks of identical
machines under spines, GPUs unevenly busy (some nodes full, some empty, most partial, with holes in
the device indices), and a queue of pending work in a production-like mix. Real dumps cannot be
shared, and the openb trace (``adapters/data/openb``) gives sizes but no Kubernetes objects,
so this module makes them up: the same seed and options always give byte-identical output.

The objects are what the real API server prints: Nodes (GPU model in the label
``nvidia.com/gpu.product`` as NVIDIA GPU feature discovery sets it, rack and spine in
``topology.vcsat.io/rack`` / ``topology.vcsat.io/spine``), HyperNodes (tier 1 racks, tier 2 spines),
PriorityClasses, Volcano Queues, PodGroups, and Pods with full container specs. Bound GPU pods carry
``vcsat.io/gpu-ids``; pending pods carry ``scheduling.k8s.io/group-name`` and ``volcano.sh/task-spec``.
"""

from __future__ import annotations

import json
import math
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

GPU = "nvidia.com/gpu"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
RACK_LABEL = "topology.vcsat.io/rack"
SPINE_LABEL = "topology.vcsat.io/spine"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_ANNOTATION = "volcano.sh/task-spec"
GPU_IDS_ANNOTATION = "vcsat.io/gpu-ids"

SYSTEM_POD_CPU_MILLI = 100
SYSTEM_POD_MEM_MI = 128

HIGH_PRIORITY = ("high-priority", 1000)
DEFAULT_PRIORITY = ("default-priority", 0)
LOW_PRIORITY = ("low-priority", -100)

Object = dict[str, Any]


@dataclass(frozen=True)
class NodeShape:
    """One machine type; racks are homogeneous, so a shape is drawn per rack."""

    gpu_product: str
    instance_type: str
    cpu: int
    """Allocatable cores."""
    memory_gi: int
    """Allocatable memory in GiB."""
    gpu_memory_mib: int
    gpu_family: str
    share: float
    """Relative share of racks with this shape."""


DEFAULT_SHAPES: tuple[NodeShape, ...] = (
    NodeShape("NVIDIA-A100-SXM4-80GB", "p4de.24xlarge", 128, 1024, 81920, "ampere", 0.5),
    NodeShape("NVIDIA-H100-80GB-HBM3", "p5.48xlarge", 192, 2048, 81559, "hopper", 0.3),
    NodeShape("Tesla-V100-SXM2-32GB", "p3dn.24xlarge", 96, 768, 32768, "volta", 0.2),
)


HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class GeneratorOptions:
    """What to make up. Every default is the 1,000-node benchmark cluster."""

    nodes: int = 1000
    gpus_per_node: int = 8
    rack_size: int = 16
    racks_per_spine: int = 8
    busy_gpu_fraction: float = 0.5
    """Share of all GPUs held by running pods (met exactly, up to rounding)."""
    pending_jobs: int = 2000
    target_pending_pods: int | None = None
    """Pending pods over all jobs; None means 1.5 × pending_jobs. Met exactly when the mix allows."""
    queues: tuple[tuple[str, int], ...] = (("production", 4), ("research", 2), ("dev", 1))
    """(name, weight) of the user queues; each also names the namespace of its jobs."""
    seed: int = 0
    high_priority_share: float = 0.1
    low_priority_share: float = 0.3
    multi_node_job_share: float = 0.05
    """Pending gangs of 2–4 pods × a whole node of GPUs."""
    ps_worker_job_share: float = 0.04
    """Pending two-task jobs: one CPU parameter server and 2–4 GPU workers (minTaskMember)."""
    model_pinned_share: float = 0.2
    """GPU jobs that constrain the GPU model (nodeSelector or required node affinity)."""
    anti_affinity_share: float = 0.0
    """Share of the pending pods whose jobs spread one pod per node: required pod anti-affinity on
    ``kubernetes.io/hostname`` against their own job's pods (whole jobs are picked at random until
    the share is reached; drawn from a random stream of its own, so the rest stays the same)."""
    unavailable_node_fraction: float = 0.01
    """Nodes cordoned or NotReady (half each); they keep their running pods."""
    system_pods_per_node: int = 1
    """DaemonSet pods of the default scheduler in kube-system on every node: fixed load, no victims."""
    rack_members: Literal["exact", "regex"] = "exact"
    """How tier-1 HyperNodes name their nodes: one exactMatch member per node, or one regexMatch."""
    shapes: tuple[NodeShape, ...] = DEFAULT_SHAPES
    scheduler_name: str = "vcsat"
    spread_job_share: float = 0.0
    """Pending jobs (not multi-node) whose pods carry a DoNotSchedule topology spread constraint over
    their own job's pods, maxSkew 1: half over the spine label (a zone), half over hostnames."""
    start_epoch: int = 1_748_851_200
    """Creation time of the first running job (2025-06-02T08:00:00Z); everything follows in order."""

    def __post_init__(self) -> None:
        problems = []
        if self.nodes < 1:
            problems.append("nodes must be at least 1")
        if self.gpus_per_node < 1:
            problems.append("gpus_per_node must be at least 1")
        if self.rack_size < 1 or self.racks_per_spine < 1:
            problems.append("rack_size and racks_per_spine must be at least 1")
        if not 0.0 <= self.busy_gpu_fraction <= 1.0:
            problems.append("busy_gpu_fraction must be within [0, 1]")
        if self.pending_jobs < 0:
            problems.append("pending_jobs must not be negative")
        if self.target_pending_pods is not None and self.target_pending_pods < self.pending_jobs:
            problems.append("target_pending_pods must be at least pending_jobs")
        if not self.queues or any(weight < 1 for _, weight in self.queues):
            problems.append("queues must be non-empty with weights of at least 1")
        for name in (
            "high_priority_share",
            "low_priority_share",
            "multi_node_job_share",
            "ps_worker_job_share",
            "model_pinned_share",
            "anti_affinity_share",
            "unavailable_node_fraction",
            "spread_job_share",
        ):
            if not 0.0 <= getattr(self, name) <= 1.0:
                problems.append(f"{name} must be within [0, 1]")
        if self.high_priority_share + self.low_priority_share > 1.0:
            problems.append("high_priority_share + low_priority_share must be at most 1")
        if not self.shapes:
            problems.append("shapes must not be empty")
        if not 0 <= self.system_pods_per_node <= 10:
            problems.append("system_pods_per_node must be within [0, 10]")
        elif any(
            shape.cpu * 1000 - SYSTEM_POD_CPU_MILLI * 10 < 500 * self.gpus_per_node
            or shape.memory_gi - 2 < self.gpus_per_node
            for shape in self.shapes
        ):
            problems.append("every shape needs at least 0.5 cores and 1 GiB per GPU")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def pending_pods(self) -> int:
        if self.target_pending_pods is not None:
            return self.target_pending_pods
        return round(1.5 * self.pending_jobs)


# ---------------------------------------------------------------------------------------------
# Small helpers


def _timestamp(epoch: int) -> str:
    # Hand-rolled rather than datetime for speed: tens of thousands of calls per instance.
    days, seconds = divmod(epoch, 86_400)
    hour, rest = divmod(seconds, 3600)
    minute, second = divmod(rest, 60)
    # Civil-from-days (Howard Hinnant), valid for every date after 1970.
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _memory(gib: int) -> str:
    return f"{gib // 1024}Ti" if gib % 1024 == 0 else f"{gib}Gi"


def _cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _digits(count: int) -> int:
    return max(2, len(str(max(count - 1, 0))))


_DEFAULT_TOLERATIONS = (
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
)
"""What the DefaultTolerationSeconds admission plugin adds to every pod."""


@dataclass
class _Rack:
    index: int
    name: str
    spine: str
    shape: NodeShape
    nodes: list[str] = field(default_factory=list)


@dataclass
class _NodeState:
    name: str
    rack: _Rack
    cpu_free_milli: int
    """After the system pods: what the job pods may take."""
    mem_free_gi: int
    free_gpus: list[int]
    used_target: int = 0
    cpu_per_gpu_cap: int = 0
    mem_per_gpu_cap: int = 0


# ---------------------------------------------------------------------------------------------
# Cluster: racks, nodes, hypernodes


def _racks(options: GeneratorOptions, rng: random.Random) -> list[_Rack]:
    rack_count = math.ceil(options.nodes / options.rack_size)
    rack_width = max(3, _digits(rack_count))
    spine_width = _digits(math.ceil(rack_count / options.racks_per_spine))
    slot_width = _digits(options.rack_size)
    weights = [shape.share for shape in options.shapes]
    racks = []
    for index in range(rack_count):
        rack = _Rack(
            index=index,
            name=f"rack-{index:0{rack_width}d}",
            spine=f"spine-{index // options.racks_per_spine:0{spine_width}d}",
            shape=rng.choices(options.shapes, weights)[0],
        )
        first = index * options.rack_size
        for slot in range(min(options.rack_size, options.nodes - first)):
            rack.nodes.append(f"gpu-r{index:0{rack_width}d}-n{slot:0{slot_width}d}")
        racks.append(rack)
    return racks


def _node_object(name: str, rack: _Rack, options: GeneratorOptions, ip: int, state: str) -> Object:
    shape = rack.shape
    gpus = str(options.gpus_per_node)
    resources = {
        "cpu": str(shape.cpu),
        "ephemeral-storage": "3500Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": _memory(shape.memory_gi),
        GPU: gpus,
        "pods": "110",
    }
    spec: Object = {"podCIDR": f"10.{128 + ip // 256}.{ip % 256}.0/24"}
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet is posting ready status",
    }
    if state == "cordoned":
        spec["unschedulable"] = True
        spec["taints"] = [{"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable"}]
    elif state == "notready":
        spec["taints"] = [
            {"effect": "NoSchedule", "key": "node.kubernetes.io/unreachable"},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable"},
        ]
        ready = {
            "type": "Ready",
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
        }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/arch": "amd64",
                HOSTNAME: name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": shape.instance_type,
                GPU_PRODUCT_LABEL: shape.gpu_product,
                "nvidia.com/gpu.count": gpus,
                "nvidia.com/gpu.family": shape.gpu_family,
                "nvidia.com/gpu.memory": str(shape.gpu_memory_mib),
                RACK_LABEL: rack.name,
                SPINE_LABEL: rack.spine,
            },
        },
        "spec": spec,
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{ip // 256}.{ip % 256}"},
                {"type": "Hostname", "address": name},
            ],
            "allocatable": resources,
            "capacity": dict(resources),
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID"},
                ready,
            ],
        },
    }


def _hypernodes(racks: list[_Rack], options: GeneratorOptions) -> Iterator[Object]:
    spines: dict[str, list[str]] = {}
    for rack in racks:
        spines.setdefault(rack.spine, []).append(rack.name)
        if options.rack_members == "regex":
            prefix = rack.nodes[0].rsplit("-", 1)[0]
            members = [{"type": "Node", "selector": {"regexMatch": {"pattern": f"^{prefix}-n[0-9]+$"}}}]
        else:
            members = [{"type": "Node", "selector": {"exactMatch": {"name": name}}} for name in rack.nodes]
        yield _hypernode(rack.name, 1, "rack", members)
    for spine, rack_names in spines.items():
        members = [{"type": "HyperNode", "selector": {"exactMatch": {"name": name}}} for name in rack_names]
        yield _hypernode(spine, 2, "spine", members)


def _hypernode(name: str, tier: int, tier_name: str, members: list[Object]) -> Object:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "tierName": tier_name, "members": members},
        "status": {"nodeCount": len(members)} if tier == 1 else {},
    }


def _priority_classes() -> list[Object]:
    def pc(name: str, value: int, description: str, *, default: bool = False) -> Object:
        return {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": default,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": description,
        }

    return [
        pc(
            "system-cluster-critical",
            2_000_000_000,
            "Used for system critical pods that must run in the cluster.",
        ),
        pc("system-node-critical", 2_000_001_000, "Used for system critical pods that must not be moved."),
        pc(HIGH_PRIORITY[0], HIGH_PRIORITY[1], "Production training and serving; may preempt lower jobs."),
        pc(DEFAULT_PRIORITY[0], DEFAULT_PRIORITY[1], "Everything that names no class.", default=True),
        pc(LOW_PRIORITY[0], LOW_PRIORITY[1], "Best-effort batch work; first to be preempted."),
    ]


def _queues(options: GeneratorOptions) -> list[Object]:
    def queue(name: str, weight: int) -> Object:
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": weight, "reclaimable": True},
            "status": {"state": "Open"},
        }

    named = [name for name, _ in options.queues]
    default = [] if "default" in named else [queue("default", 1)]
    return default + [queue(name, weight) for name, weight in options.queues]


# ---------------------------------------------------------------------------------------------
# Jobs: podgroups and pods, running or pending


@dataclass
class _Task:
    name: str
    replicas: int
    gpus: int
    cpu_milli: int
    mem_gi: int
    image: str


@dataclass
class _Job:
    name: str
    namespace: str
    queue: str
    priority: tuple[str, int]
    created: int
    tasks: list[_Task]
    selector: dict[str, str] | None = None
    affinity: Object | None = None
    topology: Object | None = None
    spread: Object | None = None
    spread_pods: bool = False
    """One pod per node: required pod anti-affinity on the hostname against its own pods."""

    @property
    def pods(self) -> int:
        return sum(task.replicas for task in self.tasks)


_IMAGES = {
    "infer": "nvcr.io/nvidia/tritonserver:24.05-py3",
    "train": "nvcr.io/nvidia/pytorch:24.05-py3",
    "etl": "apache/spark:3.5.1",
    "ps": "tensorflow/tensorflow:2.16.1",
}


def _gpu_task(
    rng: random.Random,
    name: str,
    replicas: int,
    gpus: int,
    image: str,
    on: _NodeState | None = None,
    per_node: int = 8,
) -> _Task:
    """Per GPU 4–10 cores and 32–80 GiB (the openb trace's 1-GPU pods ask about 10 cores and 30 GiB).
    A running pod (``on`` a node) is capped at the node's share per GPU, so no node is over-committed."""
    cpu_per_gpu = rng.choice((4000, 6000, 8000, 10000))
    mem_per_gpu = rng.choice((32, 48, 64, 80))
    if on is not None:
        cpu_per_gpu = min(cpu_per_gpu, on.cpu_per_gpu_cap)
        mem_per_gpu = min(mem_per_gpu, on.mem_per_gpu_cap)
    return _Task(name, replicas, gpus, cpu_per_gpu * gpus, mem_per_gpu * gpus, image)


def _charge(state: _NodeState, task: _Task) -> None:
    state.cpu_free_milli -= task.cpu_milli
    state.mem_free_gi -= task.mem_gi
    assert state.cpu_free_milli >= 0 and state.mem_free_gi >= 0, state.name


def _cpu_task(rng: random.Random, name: str, replicas: int, image: str) -> _Task:
    return _Task(
        name,
        replicas,
        0,
        rng.choice((1000, 2000, 4000, 8000, 16000)),
        rng.choice((2, 4, 8, 16, 32, 64)),
        image,
    )


def _job_pods(
    job: _Job,
    options: GeneratorOptions,
    rng: random.Random,
    placements: dict[tuple[str, int], Any] | None,
    uid: str,
) -> Iterator[Object]:
    """Pods of a job; ``placements`` maps (task, replica) to (node, gpu ids) for running jobs."""
    for task in job.tasks:
        for replica in range(task.replicas):
            requests: Object = {"cpu": _cpu(task.cpu_milli), "memory": _memory(task.mem_gi)}
            limits: Object = {"cpu": _cpu(task.cpu_milli * 2), "memory": _memory(task.mem_gi)}
            if task.gpus:
                requests[GPU] = str(task.gpus)
                limits[GPU] = str(task.gpus)
            pod_name = f"{job.name}-{task.name}-{replica}"
            annotations = {
                GROUP_ANNOTATION: job.name,
                TASK_ANNOTATION: task.name,
                "volcano.sh/job-name": job.name,
            }
            spec: Object = {
                "containers": [
                    {
                        "name": task.name,
                        "image": task.image,
                        "command": ["/bin/sh", "-c", "exec /workspace/run.sh"],
                        "resources": {"limits": limits, "requests": requests},
                    }
                ],
                "restartPolicy": "OnFailure",
                "schedulerName": options.scheduler_name,
                "priority": job.priority[1],
                "priorityClassName": job.priority[0],
                "terminationGracePeriodSeconds": 30,
                "tolerations": [dict(t) for t in _DEFAULT_TOLERATIONS],
            }
            if job.selector:
                spec["nodeSelector"] = dict(job.selector)
            if job.affinity:
                spec["affinity"] = job.affinity
            if job.spread:
                spec["topologySpreadConstraints"] = [job.spread]
            if job.spread_pods:
                term = {"labelSelector": {"matchLabels": {"volcano.sh/job-name": job.name}}, "topologyKey": HOSTNAME}
                spec["affinity"] = {
                    **(job.affinity or {}),
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
                }
            status: Object
            if placements is None:
                status = {"phase": "Pending", "qosClass": "Burstable"}
            else:
                node, gpu_ids = placements[(task.name, replica)]
                spec["nodeName"] = node
                if gpu_ids:
                    annotations[GPU_IDS_ANNOTATION] = ",".join(map(str, gpu_ids))
                status = {
                    "phase": "Running",
                    "qosClass": "Burstable",
                    "startTime": _timestamp(job.created + 5),
                }
            yield {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod_name,
                    "namespace": job.namespace,
                    "uid": _uid(rng),
                    "creationTimestamp": _timestamp(job.created + 1),
                    "labels": {
                        "volcano.sh/job-name": job.name,
                        "volcano.sh/queue-name": job.queue,
                        "volcano.sh/task-spec": task.name,
                    },
                    "annotations": annotations,
                    "ownerReferences": [
                        {
                            "apiVersion": "batch.volcano.sh/v1alpha1",
                            "kind": "Job",
                            "name": job.name,
                            "uid": uid,
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": spec,
                "status": status,
            }


def _podgroup(job: _Job, phase: str, uid: str) -> Object:
    min_resources: dict[str, int] = {"cpu": 0, "memory": 0, GPU: 0}
    for task in job.tasks:
        min_resources["cpu"] += task.cpu_milli * task.replicas
        min_resources["memory"] += task.mem_gi * task.replicas
        min_resources[GPU] += task.gpus * task.replicas
    spec: Object = {
        "minMember": job.pods,
        "queue": job.queue,
        "priorityClassName": job.priority[0],
        "minResources": {"cpu": _cpu(min_resources["cpu"]), "memory": _memory(min_resources["memory"])},
    }
    if min_resources[GPU]:
        spec["minResources"][GPU] = str(min_resources[GPU])
    if len(job.tasks) > 1:
        spec["minTaskMember"] = {task.name: task.replicas for task in job.tasks}
    if job.topology:
        spec["networkTopology"] = job.topology
    status: Object = {"phase": phase}
    if phase == "Running":
        status["running"] = job.pods
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "uid": _uid(random.Random(uid)),
            "creationTimestamp": _timestamp(job.created),
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": job.name,
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
        "status": status,
    }


def _priority(rng: random.Random, options: GeneratorOptions) -> tuple[str, int]:
    draw = rng.random()
    if draw < options.high_priority_share:
        return HIGH_PRIORITY
    if draw < options.high_priority_share + options.low_priority_share:
        return LOW_PRIORITY
    return DEFAULT_PRIORITY


# ---------------------------------------------------------------------------------------------
# Running load


def _used_gpus_per_node(states: list[_NodeState], options: GeneratorOptions, rng: random.Random) -> None:
    """Uneven spread: half the nodes full or empty (in the ratio of the busy fraction), the other half
    partial around the busy fraction; then nudged to the exact target one GPU per node at a time,
    partial nodes first, so the full and empty ones mostly stay so."""
    per_node = options.gpus_per_node
    target = round(options.busy_gpu_fraction * per_node * len(states))
    f = options.busy_gpu_fraction
    for state in states:
        draw = rng.random()
        if draw < 0.5 * f:
            state.used_target = per_node
        elif draw < 0.5:
            state.used_target = 0
        else:
            partial = round(rng.gauss(f * per_node, per_node / 4))
            state.used_target = min(max(partial, 1), max(per_node - 1, 1))
    total = sum(state.used_target for state in states)
    order = list(range(len(states)))
    rng.shuffle(order)
    # Partial nodes first, then the rest; walk round-robin until the total is exact.
    order.sort(key=lambda i: 0 < states[i].used_target < per_node, reverse=True)
    step = 1 if total < target else -1
    while total != target:
        moved = False
        for i in order:
            if total == target:
                break
            state = states[i]
            if 0 <= state.used_target + step <= per_node:
                state.used_target += step
                total += step
                moved = True
        if not moved:
            break


def _take_gpus(state: _NodeState, count: int, rng: random.Random, per_node: int) -> list[int]:
    """Device indices for a pod: an aligned block when one is free (as the device plugin prefers
    NVLink-local sets), otherwise any free ones; 1-GPU pods land anywhere, which leaves holes."""
    free = state.free_gpus
    if count == 1:
        chosen = [free[rng.randrange(len(free))]]
    else:
        blocks = [
            list(range(start, start + count))
            for start in range(0, per_node - count + 1, count)
            if all(i in free for i in range(start, start + count))
        ]
        chosen = rng.choice(blocks) if blocks else sorted(rng.sample(free, count))
    for index in chosen:
        free.remove(index)
    return sorted(chosen)


def _split(used: int, per_node: int, rng: random.Random) -> list[int]:
    """GPU counts of the pods that together hold ``used`` GPUs on one node."""
    sizes = []
    while used:
        options = [size for size in (per_node, 4, 2, 1) if size <= used]
        weights = [1 if size == per_node else {4: 2, 2: 2, 1: 4}.get(size, 1) for size in options]
        size = rng.choices(options, weights)[0]
        sizes.append(size)
        used -= size
    return sorted(sizes, reverse=True)


def _running(
    states: list[_NodeState], options: GeneratorOptions, rng: random.Random, next_id: Iterator[int]
) -> tuple[list[Object], list[Object], int]:
    """PodGroups and pods of the running jobs, and the creation time of the newest one."""
    per_node = options.gpus_per_node
    queue_names = [name for name, _ in options.queues]
    podgroups: list[Object] = []
    pods: list[Object] = []
    jobs: list[tuple[_Job, dict[tuple[str, int], Any]]] = []
    created = options.start_epoch

    def new_job(prefix: str, tasks: list[_Task]) -> _Job:
        nonlocal created
        created += rng.randint(5, 90)
        queue = rng.choice(queue_names)
        return _Job(f"{prefix}-{next(next_id):06d}", queue, queue, _priority(rng, options), created, tasks)

    # Multi-node gangs take runs of full nodes within one rack, as a topology-aware scheduler left them.
    by_rack: dict[int, list[_NodeState]] = {}
    for state in states:
        by_rack.setdefault(state.rack.index, []).append(state)
    gang_nodes: set[str] = set()
    for rack_states in by_rack.values():
        full = [state for state in rack_states if state.used_target == per_node]
        while len(full) >= 2 and rng.random() < 0.6:
            size = min(len(full), rng.randint(2, 4))
            members, full = full[:size], full[size:]
            task = _gpu_task(rng, "worker", size, per_node, _IMAGES["train"], members[0], per_node)
            job = new_job("pretrain", [task])
            placement = {}
            for replica, state in enumerate(members):
                _charge(state, _Task(task.name, 1, task.gpus, task.cpu_milli, task.mem_gi, task.image))
                placement[("worker", replica)] = (state.name, _take_gpus(state, per_node, rng, per_node))
                gang_nodes.add(state.name)
            jobs.append((job, placement))

    for state in states:
        if state.name in gang_nodes:
            continue
        for size in _split(state.used_target, per_node, rng):
            prefix = "train" if size >= 4 else rng.choice(("infer", "finetune"))
            image = _IMAGES["infer" if prefix == "infer" else "train"]
            task = _gpu_task(rng, "main", 1, size, image, state, per_node)
            _charge(state, task)
            job = new_job(prefix, [task])
            jobs.append((job, {("main", 0): (state.name, _take_gpus(state, size, rng, per_node))}))

    # Some CPU-only pods on GPU nodes (data loaders, ETL): GPUs free while the CPU is not.
    for state in states:
        if rng.random() < 0.12:
            task = _cpu_task(rng, "main", 1, _IMAGES["etl"])
            if task.cpu_milli <= state.cpu_free_milli and task.mem_gi <= state.mem_free_gi:
                _charge(state, task)
                job = new_job("etl", [task])
                jobs.append((job, {("main", 0): (state.name, [])}))

    for job, placement in jobs:
        uid = _uid(rng)
        podgroups.append(_podgroup(job, "Running", uid))
        pods.extend(_job_pods(job, options, rng, placement, uid))
    return podgroups, pods, created


_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters Kubernetes uses for generated name suffixes."""


def _system_pods(states: list[_NodeState], options: GeneratorOptions, rng: random.Random) -> Iterator[Object]:
    created = _timestamp(options.start_epoch - 86_400)
    taken: set[str] = set()
    for state in states:
        for index in range(options.system_pods_per_node):
            name = "nvidia-device-plugin" if index == 0 else f"node-agent-{index}"
            # DaemonSet pods get a random 5-character suffix; redraw on a clash, as the API server does.
            suffix = "".join(rng.choices(_NAME_SUFFIX_ALPHABET, k=5))
            while f"{name}-{suffix}" in taken:
                suffix = "".join(rng.choices(_NAME_SUFFIX_ALPHABET, k=5))
            taken.add(f"{name}-{suffix}")
            yield {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{suffix}",
                    "namespace": "kube-system",
                    "uid": _uid(rng),
                    "creationTimestamp": created,
                    "labels": {"app.kubernetes.io/name": name},
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "DaemonSet",
                            "name": name,
                            "uid": "6b1f5a8e-0000-4000-8000-00000000000" + str(index % 10),
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {
                    "containers": [
                        {
                            "name": name,
                            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.15.0",
                            "resources": {
                                "limits": {"memory": f"{2 * SYSTEM_POD_MEM_MI}Mi"},
                                "requests": {
                                    "cpu": f"{SYSTEM_POD_CPU_MILLI}m",
                                    "memory": f"{SYSTEM_POD_MEM_MI}Mi",
                                },
                            },
                        }
                    ],
                    "nodeName": state.name,
                    "priority": 2_000_001_000,
                    "priorityClassName": "system-node-critical",
                    "schedulerName": "default-scheduler",
                    "tolerations": [{"operator": "Exists"}],
                },
                "status": {"phase": "Running", "qosClass": "Burstable", "startTime": created},
            }


# ---------------------------------------------------------------------------------------------
# Pending work


def _pending_jobs(
    options: GeneratorOptions, rng: random.Random, products: list[str], next_id: Iterator[int], start: int
) -> list[_Job]:
    jobs_total = options.pending_jobs
    per_node = options.gpus_per_node
    queue_names = [name for name, _ in options.queues]
    kinds: list[tuple[str, list[int]]] = []  # (kind, replicas per task)

    multi_node = min(round(jobs_total * options.multi_node_job_share), jobs_total)
    ps_worker = min(round(jobs_total * options.ps_worker_job_share), jobs_total - multi_node)
    kinds += [("multi-node", [rng.randint(2, 4)]) for _ in range(multi_node)]
    kinds += [("ps-worker", [1, rng.randint(2, 4)]) for _ in range(ps_worker)]
    # A tight pod target (few pods per job) has no room for every multi-pod job: drop the last ones.
    budget = options.pending_pods - jobs_total
    while kinds and sum(sum(r) - 1 for _, r in kinds) > budget:
        kinds.pop()
    multi_node = sum(1 for kind, _ in kinds if kind == "multi-node")
    ps_worker = len(kinds) - multi_node
    rest_jobs = jobs_total - multi_node - ps_worker
    extra = options.pending_pods - rest_jobs - sum(sum(r) for _, r in kinds)
    # The pods beyond one per job go to data-parallel gangs of 2–8 replicas; a gang of one more
    # replica until the total is met (or every remaining job is already a full gang).
    gangs: list[int] = []
    while extra > 0 and len(gangs) < rest_jobs:
        grow = min(extra, rng.randint(1, 4))
        gangs.append(1 + grow)
        extra -= grow
    for i in range(len(gangs)):
        if extra <= 0:
            break
        grow = min(extra, 8 - gangs[i])
        gangs[i] += grow
        extra -= grow
    kinds += [("ddp", [replicas]) for replicas in gangs]
    singles = ("cpu", "gpu1", "gpu2", "gpu4", f"gpu{per_node}")
    kinds += [
        (rng.choices(singles, (0.12, 0.65, 0.11, 0.08, 0.04))[0], [1]) for _ in range(rest_jobs - len(gangs))
    ]
    rng.shuffle(kinds)

    jobs = []
    created = start
    for kind, replicas in kinds:
        created += rng.randint(1, 30)
        queue = rng.choice(queue_names)
        if kind == "multi-node":
            tasks = [_gpu_task(rng, "worker", replicas[0], per_node, _IMAGES["train"])]
            prefix = "pretrain"
        elif kind == "ps-worker":
            tasks = [
                _cpu_task(rng, "ps", 1, _IMAGES["ps"]),
                _gpu_task(rng, "worker", replicas[1], rng.choice((1, 2)), _IMAGES["ps"]),
            ]
            prefix = "recsys"
        elif kind == "ddp":
            tasks = [_gpu_task(rng, "worker", replicas[0], rng.choice((1, 1, 2)), _IMAGES["train"])]
            prefix = "ddp"
        elif kind == "cpu":
            tasks = [_cpu_task(rng, "main", 1, _IMAGES["etl"])]
            prefix = "etl"
        else:
            gpus = int(kind[3:])
            prefix = "infer" if gpus == 1 and rng.random() < 0.4 else "finetune"
            tasks = [_gpu_task(rng, "main", 1, gpus, _IMAGES["infer" if prefix == "infer" else "train"])]
        job = _Job(f"{prefix}-{next(next_id):06d}", queue, queue, _priority(rng, options), created, tasks)
        if kind != "cpu" and rng.random() < options.model_pinned_share:
            _pin_model(job, products, rng)
        if kind == "multi-node":
            draw = rng.random()
            if draw < 0.4:
                job.topology = {"mode": "hard", "highestTierAllowed": 1}
            elif draw < 0.7:
                job.topology = {"mode": "soft", "highestTierAllowed": 1}
        jobs.append(job)
    return jobs


def _add_spread(jobs: list[_Job], options: GeneratorOptions) -> None:
    """Topology spread on a share of the pending jobs, drawn from a generator of its own so that the
    rest of the instance is the same as without it."""
    rng = random.Random(f"{options.seed}-spread")
    for job in jobs:
        if job.topology is not None or rng.random() >= options.spread_job_share:
            continue
        job.spread = {
            "maxSkew": 1,
            "topologyKey": SPINE_LABEL if rng.random() < 0.5 else "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"volcano.sh/job-name": job.name}},
        }
def _spread_jobs(jobs: list[_Job], options: GeneratorOptions) -> None:
    """Mark random whole jobs as spreading one pod per node until their pods reach the share."""
    rng = random.Random(f"anti-affinity-{options.seed}")
    target = round(options.anti_affinity_share * sum(job.pods for job in jobs))
    marked = 0
    for job in rng.sample(jobs, len(jobs)):
        if marked >= target:
            break
        job.spread_pods = True
        marked += job.pods


def _pin_model(job: _Job, products: list[str], rng: random.Random) -> None:
    product = rng.choice(products)
    style = rng.randrange(3)
    if style == 0:
        job.selector = {GPU_PRODUCT_LABEL: product}
        return
    if style == 1 or len(products) < 2:
        requirement = {"key": GPU_PRODUCT_LABEL, "operator": "In", "values": [product]}
    else:
        requirement = {"key": GPU_PRODUCT_LABEL, "operator": "NotIn", "values": [products[-1]]}
    job.affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [requirement]}]
            }
        }
    }


# ---------------------------------------------------------------------------------------------
# Public API


def generate_instance(options: GeneratorOptions | None = None) -> dict[str, Any]:
    """A ``v1`` ``List`` of Nodes, HyperNodes, PriorityClasses, Queues, PodGroups and Pods.

    Deterministic: the same options give the same objects in the same order. Separate random
    streams for the cluster, the running load and the pending work mean that changing, say, the
    number of pending jobs leaves the nodes and the running pods as they were.
    """
    options = options or GeneratorOptions()
    cluster_rng = random.Random(f"vcsat-cluster:{options.seed}")
    load_rng = random.Random(f"vcsat-load:{options.seed}")
    pending_rng = random.Random(f"vcsat-pending:{options.seed}")

    racks = _racks(options, cluster_rng)
    node_names = [name for rack in racks for name in rack.nodes]
    unavailable = round(options.unavailable_node_fraction * options.nodes)
    off = set(cluster_rng.sample(range(options.nodes), unavailable))
    off_order = sorted(off)
    node_state = {i: ("cordoned" if k % 2 == 0 else "notready") for k, i in enumerate(off_order)}

    nodes: list[Object] = []
    states: list[_NodeState] = []
    index = 0
    for rack in racks:
        for name in rack.nodes:
            nodes.append(_node_object(name, rack, options, index, node_state.get(index, "ready")))
            cpu_free = rack.shape.cpu * 1000 - SYSTEM_POD_CPU_MILLI * options.system_pods_per_node
            mem_free = rack.shape.memory_gi - math.ceil(
                SYSTEM_POD_MEM_MI * options.system_pods_per_node / 1024
            )
            states.append(
                _NodeState(
                    name,
                    rack,
                    cpu_free,
                    mem_free,
                    list(range(options.gpus_per_node)),
                    cpu_per_gpu_cap=cpu_free // options.gpus_per_node // 500 * 500,
                    mem_per_gpu_cap=mem_free // options.gpus_per_node,
                )
            )
            index += 1
    assert len(node_names) == len(states)

    counter = iter(range(1_000_000_000))
    _used_gpus_per_node(states, options, load_rng)
    running_groups, running_pods, newest_running = _running(states, options, load_rng, counter)
    system_pods = list(_system_pods(states, options, load_rng))

    products = sorted({rack.shape.gpu_product for rack in racks})
    # Pending work arrived after everything that runs (an hour after the newest running job).
    pending_start = newest_running + 3600
    pending_groups: list[Object] = []
    pending_pods: list[Object] = []
    jobs = _pending_jobs(options, pending_rng, products, counter, pending_start)
    if options.spread_job_share > 0:
        _add_spread(jobs, options)
    if options.anti_affinity_share > 0:
        _spread_jobs(jobs, options)
    inqueue_before = len(jobs) // 2  # the older half has passed Volcano's enqueue action
    for position, job in enumerate(jobs):
        uid = _uid(pending_rng)
        pending_groups.append(_podgroup(job, "Inqueue" if position < inqueue_before else "Pending", uid))
        pending_pods.extend(_job_pods(job, options, pending_rng, None, uid))

    items = [
        *nodes,
        *_hypernodes(racks, options),
        *_priority_classes(),
        *_queues(options),
        *running_groups,
        *pending_groups,
        *system_pods,
        *running_pods,
        *pending_pods,
    ]
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def dump_instance(obj: dict[str, Any], fmt: Literal["json", "yaml"]) -> str:
    if fmt == "json":
        return json.dumps(obj, separators=(",", ":"))
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(obj, Dumper=dumper, sort_keys=False, default_flow_style=False)


def write_instance(obj: dict[str, Any], path: str | Path) -> int:
    """Write an instance: compact JSON when the name ends ``.json``, else YAML. Returns the bytes written."""
    path = Path(path)
    text = dump_instance(obj, "json" if path.suffix == ".json" else "yaml")
    data = text.encode()
    path.write_bytes(data)
    return len(data)
