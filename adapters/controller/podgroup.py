"""A Job's PodGroup: the gang the scheduler admits and places all-or-nothing.

The scheduler never reads a Job; it reads the PodGroup (contract §1). So the group carries
everything the gang needs: ``minMember`` from the job's ``minAvailable``, ``minTaskMember`` per
task, the queue, the priority class, ``networkTopology``, and ``minResources``, which is what
the gang's first ``minAvailable`` pods request together (a queue admits a group only when that
much fits). Which pods are "first" follows Volcano: tasks by priority, highest first; each task's
own ``minAvailable`` pods before the rest when the job's ``minAvailable`` covers them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vcsat.adapters.controller import naming
from vcsat.adapters.controller.jobspec import JobSpec, TaskSpec
from vcsat.model.quantity import NANO, parse_nanos
from vcsat.model.resources import is_byte_resource

_BINARY_SUFFIXES = (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))
_SKIPPED_ANNOTATIONS = (naming.COMMAND_KEY, "kubectl.kubernetes.io/last-applied-configuration")


def build_podgroup(job: JobSpec, *, priorities: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The PodGroup object of ``job`` (``priorities``: PriorityClass values, to order tasks)."""
    labels = {**job.labels, **naming.job_labels(job.name, job.namespace)}
    annotations = {k: v for k, v in job.annotations.items() if k not in _SKIPPED_ANNOTATIONS}
    if job.scheduler_name:
        # Which scheduler admits the group while it has no pods yet (see vcsat.adapters.live.scheduler).
        annotations["vcsat.io/scheduler-name"] = job.scheduler_name
    if job.generation:
        annotations[naming.SYNCED_GENERATION_KEY] = str(job.generation)
    return {
        "apiVersion": naming.PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": naming.podgroup_name(job.name, job.uid),
            "namespace": job.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [naming.owner_reference(job.name, job.uid)],
        },
        "spec": podgroup_spec(job, priorities=priorities),
    }


def podgroup_spec(job: JobSpec, *, priorities: Mapping[str, int] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minMember": job.min_available,
        "minTaskMember": {task.name: task.min_available for task in job.tasks},
        "queue": job.queue,
        "minResources": format_resources(min_resources(job, priorities=priorities)),
    }
    if job.priority_class_name:
        spec["priorityClassName"] = job.priority_class_name
    if job.network_topology is not None:
        topology: dict[str, Any] = {"mode": job.network_topology.mode}
        if job.network_topology.highest_tier_allowed is not None:
            topology["highestTierAllowed"] = job.network_topology.highest_tier_allowed
        elif job.network_topology.highest_tier_name:
            topology["highestTierName"] = job.network_topology.highest_tier_name
        spec["networkTopology"] = topology
    return spec


def spec_update(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of an existing group's spec that differ from ``desired`` (a merge patch), or ``{}``.

    Only what Volcano keeps in step with the Job (sizes, resources, priority); the queue and the
    topology of a group already admitted are left alone.
    """
    patch: dict[str, Any] = {}
    for key in ("minMember", "minTaskMember", "priorityClassName"):
        if existing.get(key) != desired.get(key):
            patch[key] = desired.get(key)
    if _nanos_map(existing.get("minResources")) != _nanos_map(desired.get("minResources")):
        patch["minResources"] = desired.get("minResources")
    return patch


def pod_requests(task: TaskSpec) -> dict[str, int]:
    """One pod's requests in exact nanos, as Kubernetes counts them.

    Containers add up; each init container runs alone, so the pod needs the largest of them too;
    ``overhead`` comes on top. A limit stands in for a missing request, as the API server defaults.
    """
    spec = task.pod_spec
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = total.get(name, 0) + amount
    for container in spec.get("initContainers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = max(total.get(name, 0), amount)
    for name, amount in (spec.get("overhead") or {}).items():
        total[name] = total.get(name, 0) + parse_nanos(amount)
    return total


def min_resources(job: JobSpec, *, priorities: Mapping[str, int] | None = None) -> dict[str, int]:
    """What the gang's first ``minAvailable`` pods request together, in nanos."""
    ordered = sorted(job.tasks, key=lambda task: -_task_priority(task, priorities or {}))
    counts: dict[str, int] = {}
    wanted = job.min_available
    if wanted < sum(task.min_available for task in job.tasks):
        # The job's gang is smaller than its tasks' minimums: the first pods by priority.
        for task in ordered:
            take = min(wanted, task.replicas)
            counts[task.name] = take
            wanted -= take
            if wanted <= 0:
                break
    else:
        # Every task's minimum first, then the rest of the gang from the spare replicas.
        for task in ordered:
            counts[task.name] = task.min_available
            wanted -= task.min_available
        for task in ordered:
            if wanted <= 0:
                break
            extra = min(wanted, task.replicas - task.min_available)
            counts[task.name] += extra
            wanted -= extra
    total: dict[str, int] = {}
    for task in job.tasks:
        count = counts.get(task.name, 0)
        if not count:
            continue
        for name, amount in pod_requests(task).items():
            total[name] = total.get(name, 0) + amount * count
    return total


def format_resources(nanos: Mapping[str, int]) -> dict[str, str]:
    """Exact quantities as Kubernetes would print them (``1500m``, ``3``, ``6Gi``), zeros left out."""
    return {name: format_quantity(name, amount) for name, amount in sorted(nanos.items()) if amount}


def format_quantity(name: str, nanos: int) -> str:
    if nanos % NANO:
        return f"{nanos // 10**6}m" if nanos % 10**6 == 0 else f"{nanos}n"
    whole = nanos // NANO
    if is_byte_resource(name) and whole:
        for suffix, power in _BINARY_SUFFIXES:
            if whole % (1 << power) == 0:
                return f"{whole >> power}{suffix}"
    return str(whole)


def _container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    resources = container.get("resources") or {}
    requests = {name: parse_nanos(amount) for name, amount in (resources.get("requests") or {}).items()}
    for name, amount in (resources.get("limits") or {}).items():
        requests.setdefault(name, parse_nanos(amount))
    return requests


def _task_priority(task: TaskSpec, priorities: Mapping[str, int]) -> int:
    spec = task.pod_spec
    if isinstance(spec.get("priority"), int):
        return int(spec["priority"])
    return priorities.get(str(spec.get("priorityClassName") or ""), 0)


def _nanos_map(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    out: dict[str, int] = {}
    for name, amount in value.items():
        try:
            nanos = parse_nanos(amount)
        except ValueError:
            return {"<unparsable>": 0}
        if nanos:
            out[str(name)] = nanos
    return out
