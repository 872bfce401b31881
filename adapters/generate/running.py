"""The running load: GPUs held unevenly over the nodes, the jobs that hold them, and the
DaemonSet pods every node runs.

Half the nodes are full or empty and the rest partial, with holes in the device indices where
1-GPU pods landed; multi-node gangs hold runs of whole nodes in one rack, as a topology-aware
scheduler would have left them; a few CPU-only pods sit on GPU nodes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from vcsat.adapters.generate.cluster import NodeState
from vcsat.adapters.generate.jobs import (
    IMAGES,
    Job,
    Task,
    charge,
    cpu_task,
    draw_priority,
    gpu_task,
    job_pods,
    podgroup_object,
)
from vcsat.adapters.generate.kube import Object, new_uid, timestamp
from vcsat.adapters.generate.options import SYSTEM_POD_CPU_MILLI, SYSTEM_POD_MEM_MI, GeneratorOptions


def used_gpus_per_node(states: list[NodeState], options: GeneratorOptions, rng: random.Random) -> None:
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


def take_gpus(state: NodeState, count: int, rng: random.Random, per_node: int) -> list[int]:
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


def split_gpus(used: int, per_node: int, rng: random.Random) -> list[int]:
    """GPU counts of the pods that together hold ``used`` GPUs on one node."""
    sizes = []
    while used:
        options = [size for size in (per_node, 4, 2, 1) if size <= used]
        weights = [1 if size == per_node else {4: 2, 2: 2, 1: 4}.get(size, 1) for size in options]
        size = rng.choices(options, weights)[0]
        sizes.append(size)
        used -= size
    return sorted(sizes, reverse=True)


def running_jobs(
    states: list[NodeState], options: GeneratorOptions, rng: random.Random, next_id: Iterator[int]
) -> tuple[list[Object], list[Object], int]:
    """PodGroups and pods of the running jobs, and the creation time of the newest one."""
    per_node = options.gpus_per_node
    queue_names = [name for name, _ in options.queues]
    podgroups: list[Object] = []
    pods: list[Object] = []
    jobs: list[tuple[Job, dict[tuple[str, int], Any]]] = []
    created = options.start_epoch

    def new_job(prefix: str, tasks: list[Task]) -> Job:
        nonlocal created
        created += rng.randint(5, 90)
        queue = rng.choice(queue_names)
        return Job(f"{prefix}-{next(next_id):06d}", queue, queue, draw_priority(rng, options), created, tasks)

    # Multi-node gangs take runs of full nodes within one rack, as a topology-aware scheduler left them.
    by_rack: dict[int, list[NodeState]] = {}
    for state in states:
        by_rack.setdefault(state.rack.index, []).append(state)
    gang_nodes: set[str] = set()
    for rack_states in by_rack.values():
        full = [state for state in rack_states if state.used_target == per_node]
        while len(full) >= 2 and rng.random() < 0.6:
            size = min(len(full), rng.randint(2, 4))
            members, full = full[:size], full[size:]
            task = gpu_task(rng, "worker", size, per_node, IMAGES["train"], members[0], per_node)
            job = new_job("pretrain", [task])
            placement = {}
            for replica, state in enumerate(members):
                charge(state, Task(task.name, 1, task.gpus, task.cpu_milli, task.mem_gi, task.image))
                placement[("worker", replica)] = (state.name, take_gpus(state, per_node, rng, per_node))
                gang_nodes.add(state.name)
            jobs.append((job, placement))

    for state in states:
        if state.name in gang_nodes:
            continue
        for size in split_gpus(state.used_target, per_node, rng):
            prefix = "train" if size >= 4 else rng.choice(("infer", "finetune"))
            image = IMAGES["infer" if prefix == "infer" else "train"]
            task = gpu_task(rng, "main", 1, size, image, state, per_node)
            charge(state, task)
            job = new_job(prefix, [task])
            jobs.append((job, {("main", 0): (state.name, take_gpus(state, size, rng, per_node))}))

    # Some CPU-only pods on GPU nodes (data loaders, ETL): GPUs free while the CPU is not.
    for state in states:
        if rng.random() < 0.12:
            task = cpu_task(rng, "main", 1, IMAGES["etl"])
            if task.cpu_milli <= state.cpu_free_milli and task.mem_gi <= state.mem_free_gi:
                charge(state, task)
                job = new_job("etl", [task])
                jobs.append((job, {("main", 0): (state.name, [])}))

    for job, placement in jobs:
        uid = new_uid(rng)
        podgroups.append(podgroup_object(job, "Running", uid))
        pods.extend(job_pods(job, options, rng, placement, uid))
    return podgroups, pods, created


_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters Kubernetes uses for generated name suffixes."""


def system_pod_objects(states: list[NodeState], options: GeneratorOptions, rng: random.Random) -> Iterator[Object]:
    created = timestamp(options.start_epoch - 86_400)
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
                    "uid": new_uid(rng),
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
