"""Names, labels and annotations that the Job controller writes, spelled as Volcano spells them.

Users' scripts, dashboards and the scheduler find a job's pods by these keys (``kubectl get pods
-l volcano.sh/job-name=train``), so they must be exactly Volcano's. Every object the controller
creates has a name computed from the Job alone: a restarted controller recomputes the same names,
and "already exists" then means "already done", never a duplicate.
"""

from __future__ import annotations

from typing import Any

BATCH_GROUP = "batch.volcano.sh"
BATCH_VERSION = "v1alpha1"
JOB_API_VERSION = f"{BATCH_GROUP}/{BATCH_VERSION}"
JOB_KIND = "Job"
JOB_PLURAL = "jobs"

SCHEDULING_GROUP = "scheduling.volcano.sh"
SCHEDULING_VERSION = "v1beta1"
PODGROUP_API_VERSION = f"{SCHEDULING_GROUP}/{SCHEDULING_VERSION}"
PODGROUP_PLURAL = "podgroups"
QUEUE_PLURAL = "queues"

# Pod labels and annotations (Volcano's batch/v1alpha1 keys).
JOB_NAME_KEY = "volcano.sh/job-name"
JOB_NAMESPACE_KEY = "volcano.sh/job-namespace"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_INDEX_KEY = "volcano.sh/task-index"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
JOB_VERSION_KEY = "volcano.sh/job-version"
JOB_RETRY_COUNT_KEY = "volcano.sh/job-retry-count"
TEMPLATE_KEY = "volcano.sh/template-uid"
GROUP_NAME_KEY = "scheduling.k8s.io/group-name"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
NUMA_POLICY_KEY = "volcano.sh/numa-topology-policy"

OUT_OF_SYNC_KEY = "volcano.sh/controller-out-of-sync"
"""Set on a pod just before the controller deletes it, so that its deletion is not taken for an eviction."""

COMMAND_KEY = "vcsat.io/command"
"""The Job annotation that carried user commands before they became Command objects
(:mod:`.commands`); no longer read, and still not copied onto PodGroups."""

SYNCED_GENERATION_KEY = "vcsat.io/job-generation"
"""PodGroup annotation: the Job ``metadata.generation`` the controller last acted on. A newer one
is a spec update, Volcano's JobUpdated event."""

DEFAULT_QUEUE = "default"
DNS_LABEL_MAX = 63


def pod_name(job_name: str, task_name: str, index: int) -> str:
    """``<job>-<task>-<index>``: the pod's name, and its hostname under the svc plugin."""
    return f"{job_name}-{task_name}-{index}"


def podgroup_name(job_name: str, job_uid: str) -> str:
    """``<job>-<uid>``, as Volcano ≥ 1.5 names it: a Job re-created under the same name gets a new group."""
    return f"{job_name}-{job_uid}" if job_uid else job_name


def plugin_object_name(job_name: str, plugin: str) -> str:
    """``<job>-ssh``, ``<job>-svc``: the Secret and ConfigMap a plugin owns."""
    return f"{job_name}-{plugin}"


def env_task_key(task_name: str) -> str:
    """A task name as it appears in environment variable names: ``data-loader`` → ``DATA_LOADER``."""
    return task_name.replace("-", "_").upper()


def job_labels(job_name: str, namespace: str) -> dict[str, str]:
    """The labels that select every pod of one job (the svc plugin's Service and NetworkPolicy use them)."""
    return {JOB_NAME_KEY: job_name, JOB_NAMESPACE_KEY: namespace}


def owner_reference(job_name: str, job_uid: str) -> dict[str, Any]:
    """The controller reference that ties an object to its Job (garbage collection, adoption)."""
    return {
        "apiVersion": JOB_API_VERSION,
        "kind": JOB_KIND,
        "name": job_name,
        "uid": job_uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_uid(obj: dict[str, Any]) -> str | None:
    """The uid of the Job that controls ``obj``, or None when no Job does."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == JOB_KIND and ref.get("apiVersion") == JOB_API_VERSION:
            uid = ref.get("uid")
            return str(uid) if uid else None
    return None
