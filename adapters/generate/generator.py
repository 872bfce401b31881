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
from pathlib import Path
from typing import Any, Literal

import yaml

from vcsat.adapters.generate.cluster import (
    NodeState,
    hypernode_objects,
    make_racks,
    node_object,
    priority_classes,
    queue_objects,
)
from vcsat.adapters.generate.jobs import job_pods, podgroup_object
from vcsat.adapters.generate.kube import (
    GPU,
    GPU_IDS_ANNOTATION,
    GPU_PRODUCT_LABEL,
    GROUP_ANNOTATION,
    HOSTNAME,
    RACK_LABEL,
    SPINE_LABEL,
    TASK_ANNOTATION,
    Object,
    new_uid,
)
from vcsat.adapters.generate.options import (
    DEFAULT_PRIORITY,
    DEFAULT_SHAPES,
    HIGH_PRIORITY,
    LOW_PRIORITY,
    SYSTEM_POD_CPU_MILLI,
    SYSTEM_POD_MEM_MI,
    GeneratorOptions,
    NodeShape,
)
from vcsat.adapters.generate.pending import add_anti_affinity, add_spread, draw_pending_jobs
from vcsat.adapters.generate.running import running_jobs, system_pod_objects, used_gpus_per_node

__all__ = [
    "DEFAULT_PRIORITY",
    "DEFAULT_SHAPES",
    "GPU",
    "GPU_IDS_ANNOTATION",
    "GPU_PRODUCT_LABEL",
    "GROUP_ANNOTATION",
    "HIGH_PRIORITY",
    "HOSTNAME",
    "LOW_PRIORITY",
    "RACK_LABEL",
    "SPINE_LABEL",
    "SYSTEM_POD_CPU_MILLI",
    "SYSTEM_POD_MEM_MI",
    "TASK_ANNOTATION",
    "GeneratorOptions",
    "NodeShape",
    "Object",
    "dump_instance",
    "generate_instance",
    "write_instance",
]


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

    racks = make_racks(options, cluster_rng)
    node_names = [name for rack in racks for name in rack.nodes]
    unavailable = round(options.unavailable_node_fraction * options.nodes)
    off = set(cluster_rng.sample(range(options.nodes), unavailable))
    off_order = sorted(off)
    node_state = {i: ("cordoned" if k % 2 == 0 else "notready") for k, i in enumerate(off_order)}

    nodes: list[Object] = []
    states: list[NodeState] = []
    index = 0
    for rack in racks:
        for name in rack.nodes:
            nodes.append(node_object(name, rack, options, index, node_state.get(index, "ready")))
            cpu_free = rack.shape.cpu * 1000 - SYSTEM_POD_CPU_MILLI * options.system_pods_per_node
            mem_free = rack.shape.memory_gi - math.ceil(SYSTEM_POD_MEM_MI * options.system_pods_per_node / 1024)
            states.append(
                NodeState(
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
    used_gpus_per_node(states, options, load_rng)
    running_groups, running_pods, newest_running = running_jobs(states, options, load_rng, counter)
    system_pods = list(system_pod_objects(states, options, load_rng))

    products = sorted({rack.shape.gpu_product for rack in racks})
    # Pending work arrived after everything that runs (an hour after the newest running job).
    pending_start = newest_running + 3600
    pending_groups: list[Object] = []
    pending_pods: list[Object] = []
    jobs = draw_pending_jobs(options, pending_rng, products, counter, pending_start)
    if options.spread_job_share > 0:
        add_spread(jobs, options)
    if options.anti_affinity_share > 0:
        add_anti_affinity(jobs, options)
    inqueue_before = len(jobs) // 2  # the older half has passed Volcano's enqueue action
    for position, job in enumerate(jobs):
        uid = new_uid(pending_rng)
        pending_groups.append(podgroup_object(job, "Inqueue" if position < inqueue_before else "Pending", uid))
        pending_pods.extend(job_pods(job, options, pending_rng, None, uid))

    items = [
        *nodes,
        *hypernode_objects(racks, options),
        *priority_classes(),
        *queue_objects(options),
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
