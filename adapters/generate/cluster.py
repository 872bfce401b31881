"""The cluster-scoped objects: racks of nodes under spines, their HyperNodes, the PriorityClasses
and the Queues, and the free room of each node that the running load is drawn into.

Racks are homogeneous (a machine type is drawn per rack); a small share of the nodes is cordoned
or NotReady, as in any large cluster.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from vcsat.adapters.generate.kube import (
    GPU,
    GPU_PRODUCT_LABEL,
    HOSTNAME,
    RACK_LABEL,
    SPINE_LABEL,
    Object,
    memory_quantity,
)
from vcsat.adapters.generate.options import DEFAULT_PRIORITY, HIGH_PRIORITY, LOW_PRIORITY, GeneratorOptions, NodeShape


def _digits(count: int) -> int:
    """Width of the zero-padded indices of ``count`` names (at least two digits)."""
    return max(2, len(str(max(count - 1, 0))))


@dataclass
class Rack:
    """One rack: its nodes' names, its spine and the machine type all its nodes share."""

    index: int
    name: str
    spine: str
    shape: NodeShape
    nodes: list[str] = field(default_factory=list)


@dataclass
class NodeState:
    """One node's room while the running load is drawn into it."""

    name: str
    rack: Rack
    cpu_free_milli: int
    """After the system pods: what the job pods may take."""
    mem_free_gi: int
    free_gpus: list[int]
    used_target: int = 0
    cpu_per_gpu_cap: int = 0
    mem_per_gpu_cap: int = 0


def make_racks(options: GeneratorOptions, rng: random.Random) -> list[Rack]:
    rack_count = math.ceil(options.nodes / options.rack_size)
    rack_width = max(3, _digits(rack_count))
    spine_width = _digits(math.ceil(rack_count / options.racks_per_spine))
    slot_width = _digits(options.rack_size)
    weights = [shape.share for shape in options.shapes]
    racks = []
    for index in range(rack_count):
        rack = Rack(
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


def node_object(name: str, rack: Rack, options: GeneratorOptions, ip: int, state: str) -> Object:
    shape = rack.shape
    gpus = str(options.gpus_per_node)
    resources = {
        "cpu": str(shape.cpu),
        "ephemeral-storage": "3500Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": memory_quantity(shape.memory_gi),
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


def hypernode_objects(racks: list[Rack], options: GeneratorOptions) -> Iterator[Object]:
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


def priority_classes() -> list[Object]:
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


def queue_objects(options: GeneratorOptions) -> list[Object]:
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
