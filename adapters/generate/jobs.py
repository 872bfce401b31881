"""Jobs and the objects one job becomes: a PodGroup and its Pods, running or pending.

A job is one or more tasks of identical replicas (GPU workers, CPU parameter servers); its pods
carry full container specs, the Volcano group and task annotations, and, once bound, the node and
GPU device ids the running load put them on.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from vcsat.adapters.generate.cluster import NodeState
from vcsat.adapters.generate.kube import (
    DEFAULT_TOLERATIONS,
    GPU,
    GPU_IDS_ANNOTATION,
    GROUP_ANNOTATION,
    HOSTNAME,
    TASK_ANNOTATION,
    Object,
    cpu_quantity,
    memory_quantity,
    new_uid,
    timestamp,
)
from vcsat.adapters.generate.options import DEFAULT_PRIORITY, HIGH_PRIORITY, LOW_PRIORITY, GeneratorOptions


@dataclass
class Task:
    name: str
    replicas: int
    gpus: int
    cpu_milli: int
    mem_gi: int
    image: str


@dataclass
class Job:
    name: str
    namespace: str
    queue: str
    priority: tuple[str, int]
    created: int
    tasks: list[Task]
    selector: dict[str, str] | None = None
    affinity: Object | None = None
    topology: Object | None = None
    spread: Object | None = None
    spread_pods: bool = False
    """One pod per node: required pod anti-affinity on the hostname against its own pods."""

    @property
    def pods(self) -> int:
        return sum(task.replicas for task in self.tasks)


IMAGES = {
    "infer": "nvcr.io/nvidia/tritonserver:24.05-py3",
    "train": "nvcr.io/nvidia/pytorch:24.05-py3",
    "etl": "apache/spark:3.5.1",
    "ps": "tensorflow/tensorflow:2.16.1",
}


def gpu_task(
    rng: random.Random,
    name: str,
    replicas: int,
    gpus: int,
    image: str,
    on: NodeState | None = None,
    per_node: int = 8,
) -> Task:
    """Per GPU 4–10 cores and 32–80 GiB (the openb trace's 1-GPU pods ask about 10 cores and 30 GiB).
    A running pod (``on`` a node) is capped at the node's share per GPU, so no node is over-committed."""
    cpu_per_gpu = rng.choice((4000, 6000, 8000, 10000))
    mem_per_gpu = rng.choice((32, 48, 64, 80))
    if on is not None:
        cpu_per_gpu = min(cpu_per_gpu, on.cpu_per_gpu_cap)
        mem_per_gpu = min(mem_per_gpu, on.mem_per_gpu_cap)
    return Task(name, replicas, gpus, cpu_per_gpu * gpus, mem_per_gpu * gpus, image)


def charge(state: NodeState, task: Task) -> None:
    state.cpu_free_milli -= task.cpu_milli
    state.mem_free_gi -= task.mem_gi
    assert state.cpu_free_milli >= 0 and state.mem_free_gi >= 0, state.name


def cpu_task(rng: random.Random, name: str, replicas: int, image: str) -> Task:
    return Task(
        name,
        replicas,
        0,
        rng.choice((1000, 2000, 4000, 8000, 16000)),
        rng.choice((2, 4, 8, 16, 32, 64)),
        image,
    )


def job_pods(
    job: Job,
    options: GeneratorOptions,
    rng: random.Random,
    placements: dict[tuple[str, int], Any] | None,
    uid: str,
) -> Iterator[Object]:
    """Pods of a job; ``placements`` maps (task, replica) to (node, gpu ids) for running jobs."""
    for task in job.tasks:
        for replica in range(task.replicas):
            requests: Object = {"cpu": cpu_quantity(task.cpu_milli), "memory": memory_quantity(task.mem_gi)}
            limits: Object = {"cpu": cpu_quantity(task.cpu_milli * 2), "memory": memory_quantity(task.mem_gi)}
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
                "tolerations": [dict(t) for t in DEFAULT_TOLERATIONS],
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
                    "startTime": timestamp(job.created + 5),
                }
            yield {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod_name,
                    "namespace": job.namespace,
                    "uid": new_uid(rng),
                    "creationTimestamp": timestamp(job.created + 1),
                    "labels": {
                        "volcano.sh/job-name": job.name,
                        "volcano.sh/queue-name": job.queue,
                        "volcano.sh/task-spec": task.name,
                    },
                    "annotations": annotations,
                    "ownerReferences": [job_owner(job, uid)],
                },
                "spec": spec,
                "status": status,
            }


def job_owner(job: Job, uid: str) -> Object:
    """The owner reference of a Volcano Job's pods and PodGroup, as Volcano's controller sets it."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": job.name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def podgroup_object(job: Job, phase: str, uid: str) -> Object:
    min_resources: dict[str, int] = {"cpu": 0, "memory": 0, GPU: 0}
    for task in job.tasks:
        min_resources["cpu"] += task.cpu_milli * task.replicas
        min_resources["memory"] += task.mem_gi * task.replicas
        min_resources[GPU] += task.gpus * task.replicas
    spec: Object = {
        "minMember": job.pods,
        "queue": job.queue,
        "priorityClassName": job.priority[0],
        "minResources": {"cpu": cpu_quantity(min_resources["cpu"]), "memory": memory_quantity(min_resources["memory"])},
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
            "uid": new_uid(random.Random(uid)),
            "creationTimestamp": timestamp(job.created),
            "ownerReferences": [job_owner(job, uid)],
        },
        "spec": spec,
        "status": status,
    }


def draw_priority(rng: random.Random, options: GeneratorOptions) -> tuple[str, int]:
    draw = rng.random()
    if draw < options.high_priority_share:
        return HIGH_PRIORITY
    if draw < options.high_priority_share + options.low_priority_share:
        return LOW_PRIORITY
    return DEFAULT_PRIORITY
