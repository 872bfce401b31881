"""A Job's pods, built from its task templates with the labels and annotations Volcano sets.

The scheduler reads the group and the task from a pod's annotations (contract §1), users select
pods by the labels, and the controller reads the job version back to tell a current pod from one
left over by an earlier run. Every pod's name is ``<job>-<task>-<index>`` and its body is a pure
function of the Job, the index and the job's version, so building it twice gives the same pod.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from vcsat.adapters.controller import naming
from vcsat.adapters.controller.jobspec import JobSpec, TaskSpec
from vcsat.adapters.controller.plugins.base import JobPlugin, add_mount, add_volume, containers


def build_pod(
    job: JobSpec,
    task: TaskSpec,
    index: int,
    *,
    version: int,
    retry_count: int,
    scheduler_name: str,
    plugins: Sequence[JobPlugin] = (),
) -> dict[str, Any]:
    """The pod ``index`` of ``task`` for the job's current ``version``, plugins applied."""
    template = copy.deepcopy(dict(task.template))
    template_meta = template.get("metadata") or {}
    name = naming.pod_name(job.name, task.name, index)
    labels = dict(template_meta.get("labels") or {})
    annotations = dict(template_meta.get("annotations") or {})

    annotations.update(
        {
            naming.TASK_INDEX_KEY: str(index),
            naming.TASK_SPEC_KEY: task.name,
            naming.GROUP_NAME_KEY: naming.podgroup_name(job.name, job.uid),
            naming.JOB_NAME_KEY: job.name,
            naming.QUEUE_NAME_KEY: job.queue,
            naming.JOB_VERSION_KEY: str(version),
            naming.TEMPLATE_KEY: f"{job.name}-{task.name}",
            naming.JOB_RETRY_COUNT_KEY: str(retry_count),
        }
    )
    if task.topology_policy:
        annotations[naming.NUMA_POLICY_KEY] = task.topology_policy
    if naming.PREEMPTABLE_KEY in job.annotations:
        annotations[naming.PREEMPTABLE_KEY] = job.annotations[naming.PREEMPTABLE_KEY]
    labels.update(
        {
            naming.TASK_INDEX_KEY: str(index),
            naming.JOB_NAME_KEY: job.name,
            naming.TASK_SPEC_KEY: task.name,
            naming.JOB_NAMESPACE_KEY: job.namespace,
            naming.QUEUE_NAME_KEY: job.queue,
        }
    )
    if naming.PREEMPTABLE_KEY in job.labels:
        labels[naming.PREEMPTABLE_KEY] = job.labels[naming.PREEMPTABLE_KEY]

    spec = dict(template.get("spec") or {})
    if not spec.get("schedulerName"):
        spec["schedulerName"] = scheduler_name
    if not spec.get("priorityClassName") and job.priority_class_name:
        spec["priorityClassName"] = job.priority_class_name

    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [naming.owner_reference(job.name, job.uid)],
        },
        "spec": spec,
    }
    for number, volume in enumerate(job.volumes):
        volume_name = f"volcano-volume-{number}"
        add_volume(pod, {"name": volume_name, "persistentVolumeClaim": {"claimName": volume.claim_name}})
        for container in containers(pod, init=False):
            add_mount(container, {"name": volume_name, "mountPath": volume.mount_path})
    for plugin in plugins:
        plugin.mutate_pod(pod, job, task, index)
    return pod
