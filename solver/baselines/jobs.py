"""Pending work as the baselines see it: jobs (a PodGroup's pending pods, or one lone pod).

Every baseline walks a list of jobs in some order and places their pods; what differs is the order,
the node each pod goes to, and whether a job is placed whole or not at all. This module builds the
jobs once, with what gang semantics need: how many pods must still be placed for ``minMember`` (and
each ``minTaskMember``) given the members already running, and whether enough pods exist at all
(Volcano's gang ``JobValid``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vcsat.model import Pod, PodGroup, Snapshot
from vcsat.model.cluster import DEFAULT_QUEUE
from vcsat.solver.validator.check import gang_key


@dataclass
class Job:
    key: str
    """The PodGroup key, or the pod key of a lone pod: the key of its ``podgroups`` entry."""
    group: PodGroup | None
    queue: str
    priority: int
    created: float
    pods: list[Pod]
    """Pending pods, in task order: higher priority first, then older, then by key."""
    need: int = 1
    """Pods to place before the job is ready: ``minMember`` less the members running (at least 0)."""
    task_need: dict[str, int] = field(default_factory=dict)
    running: int = 0
    invalid: str = ""
    """Why the job cannot be placed whatever the room (too few pods, unknown PodGroup); empty if valid."""

    def ready(self, placed: list[Pod]) -> bool:
        """Volcano's ``JobReady``: enough placed for ``minMember`` and every ``minTaskMember``."""
        if len(placed) < self.need:
            return False
        if not self.task_need:
            return True
        per_task: dict[str, int] = {}
        for pod in placed:
            per_task[pod.task] = per_task.get(pod.task, 0) + 1
        return all(per_task.get(task, 0) >= n for task, n in self.task_need.items())


def task_order(pod: Pod) -> tuple[int, float, str]:
    """Volcano's and kube-scheduler's pod order: higher priority first, then older, then by key."""
    return (-pod.priority, pod.created, pod.key)


def fifo_order(job: Job) -> tuple[int, float, str]:
    """Higher priority first, then older, then by key."""
    return (-job.priority, job.created, job.key)


def pending_jobs(snapshot: Snapshot, *, gang: bool = True) -> list[Job]:
    """The jobs with pending pods, in key order. Without ``gang`` every pending pod is a job of its
    own (need 1), keyed by its gang's key so its ``podgroups`` entry is the PodGroup's."""
    groups = snapshot.podgroup_by_key
    by_key: dict[str, list[Pod]] = {}
    for pod in snapshot.pods:
        if pod.pending:
            by_key.setdefault(gang_key(pod), []).append(pod)
    jobs: list[Job] = []
    for key in sorted(by_key):
        pods = sorted(by_key[key], key=task_order)
        first = pods[0]
        group = groups.get(first.group) if first.group is not None else None
        if first.group is not None and group is None:
            jobs.append(Job(key, None, DEFAULT_QUEUE, first.priority, first.created, pods, invalid="unknown"))
            continue
        queue = group.queue if group is not None else (first.queue_name or DEFAULT_QUEUE)
        priority = _priority(group, pods)
        created = group.created if group is not None and group.created else min(p.created for p in pods)
        if not gang or group is None:
            jobs.extend(Job(key, group, queue, priority, pod.created, [pod]) for pod in pods)
            continue
        members = snapshot.pods_of_group.get(key, ())
        running = [p for p in members if p.bound]
        job = Job(key, group, queue, priority, created, pods, running=len(running))
        job.need = max(0, group.min_member - len(running))
        for task, minimum in group.min_task_member.items():
            have = sum(1 for p in running if p.task == task)
            if minimum - have > 0:
                job.task_need[task] = minimum - have
        if len(running) + len(pods) < group.min_member:
            job.invalid = f"{len(running) + len(pods)} pods exist (running or pending), minMember is {group.min_member}"
        for task, missing in job.task_need.items():
            if sum(1 for p in pods if p.task == task) < missing:
                job.invalid = job.invalid or f"task {task} has too few pods for its minTaskMember"
        jobs.append(job)
    return jobs


def _priority(group: PodGroup | None, pods: list[Pod]) -> int:
    """The PodGroup's priority when it names a class, else its highest pod priority."""
    if group is not None and (group.priority or group.priority_class):
        return group.priority
    return max(pod.priority for pod in pods)
