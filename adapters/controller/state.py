"""The Job lifecycle: one pure step from what is observed to what to do and the next status.

``decide(job, status, observation)`` returns a :class:`Plan`: pods to create and delete, whether
the PodGroup and the plugins' objects should exist, the new status, Kubernetes Events to record.
No I/O happens here, so every transition is a row in a unit test, and the reconciler only applies
plans.

Phases and actions are Volcano's (``pkg/controllers/job/state``): Pending → Running → Completing →
Completed, Restarting, Aborting → Aborted, Terminating → Terminated, Failed. Policies (task first,
then job) map an event to an action; with no matching policy the action is SyncJob: create what is
missing, count what is there, move the phase by the counts.

Where vcsat differs, on purpose:

- **Level, not edge.** Volcano reacts to watch events (a pod *became* Failed). Here the event is
  read from the state (a pod of the current job version *is* Failed), so a controller restarted at
  any point sees the same events again, and a pod from an older version, or one the controller
  itself marked for deletion, never counts. The job version, bumped by every job-wide kill,
  separates runs.
- **Status first.** The reconciler writes the new status (guarded by resourceVersion) before it
  deletes or creates anything; a kill that was recorded but not finished is finished by the next
  step: a live pod of an older version is always deleted, and while Restarting the status says
  what the restart still has to remove (:data:`RESTART_RESOURCE`), so the same failure is never
  acted on twice.
- **Evictions and user commands do not burn a retry.** A pod preempted or evicted by the cluster
  (PodEvicted) and a ``vcsat job resume`` restart the job without counting against ``maxRetry``;
  Volcano counts both.
- **One version bump per kill**, not one per reconcile of an aborting or finished job.
- Pods are created only in Pending and Running, once the PodGroup is admitted (any phase but
  Pending, as Volcano's job controller has it: Completed too, so a finished pod deleted before its
  job completed, e.g. by the taint eviction of a node that went NotReady, is made again) unless the
  controller is told not to wait; Restarting waits for the old pods to go.
- AbortJob, CompleteJob and TerminateJob also act in Restarting (Volcano ignores them there, which
  made a job that is restarting impossible to suspend).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from vcsat.adapters.controller.jobspec import ACTIONS, JobSpec, LifecyclePolicy, TaskSpec
from vcsat.adapters.controller.observe import Observation, ObservedPod
from vcsat.adapters.controller.status import FINAL_PHASES, FINISHED_PHASES, PHASES, JobStatus, parse_time

ObjectIntent = Literal["ensure", "delete", "keep"]

SYNC = "SyncJob"
WAITING_PHASES = frozenset({"", "Pending"})
"""PodGroup phases not yet admitted by the scheduler (no phase written yet reads as Pending)."""
SOFT_RETAIN = frozenset({"Succeeded", "Failed"})
"""Finished pods that a kill keeps (their logs and exit codes stay readable)."""
COMMAND_RESOURCE = "vcsat.io/command"
"""Key in ``status.controlledResources`` holding the id of the last command applied."""
RESTART_RESOURCE = "vcsat.io/restart"
"""Key in ``status.controlledResources`` saying, while Restarting, what the restart must remove:
``job`` (every pod of the older runs), ``job-keep-finished`` (their live pods only) or
``pods:<a>,<b>`` (these pods, for RestartTask/RestartPod). Written with the phase change, so a
controller that dies before the deletions finishes them on its next pass, and never counts the
same failure twice."""
INVALID_REASON = "InvalidSpec"
NON_BURNING = frozenset({"PodEvicted", "CommandIssued", "JobUpdated"})
"""Restarts caused by these do not count against ``maxRetry``: none is the job's own failure."""
_KILLING_PHASES = {"AbortJob": "Aborting", "CompleteJob": "Completing", "TerminateJob": "Terminating"}
_SETTLE = {"Aborting": "Aborted", "Completing": "Completed", "Terminating": "Terminated"}


@dataclass(frozen=True)
class JobEvent:
    """A Kubernetes Event to record on the Job."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class Plan:
    status: JobStatus
    trigger: str = "OutOfSync"
    """The event this step answers (OutOfSync: nothing in particular, a plain sync)."""
    action: str = SYNC
    create_pods: tuple[tuple[str, int], ...] = ()
    delete_pods: tuple[str, ...] = ()
    podgroup: ObjectIntent = "keep"
    job_objects: ObjectIntent = "keep"
    delete_job: bool = False
    requeue_after_s: float | None = None
    events: tuple[JobEvent, ...] = ()


@dataclass(frozen=True)
class Request:
    """The event chosen for this step and the action it maps to."""

    event: str = "OutOfSync"
    action: str = SYNC
    task: str = ""
    pod: str = ""
    message: str = ""
    command_id: str = ""

    @property
    def burns_retry(self) -> bool:
        return self.event not in NON_BURNING


def decide(job: JobSpec, status: JobStatus, seen: Observation, *, wait_for_admission: bool = True) -> Plan:
    """One step of the lifecycle of ``job``, from its current ``status`` and what is ``seen``."""
    now = seen.now or datetime.now().astimezone()
    notes: list[JobEvent] = []
    if status.phase not in PHASES:
        status = replace(status, min_available=job.min_available).entering("Pending", now)
    if status.reason == INVALID_REASON:
        status = replace(status, reason="", message="")
    status = replace(status, min_available=job.min_available)
    marker = status.controlled_resources.get(RESTART_RESOURCE, "") if status.phase == "Restarting" else ""
    if marker.startswith("pods:"):
        # The targets of an unfinished RestartTask/RestartPod: already dealt with, only to be removed.
        targets = set(marker.removeprefix("pods:").split(","))
        seen = replace(seen, pods=tuple(replace(p, out_of_sync=True) if p.name in targets else p for p in seen.pods))

    request, wait = _find_request(job, status, seen, now)
    if request.command_id:
        resources = {**status.controlled_resources, COMMAND_RESOURCE: request.command_id}
        status = replace(status, controlled_resources=resources)
        if request.action not in ACTIONS:
            notes.append(JobEvent("Warning", "CommandRejected", request.message))
            request = Request(event="CommandIssued", action=SYNC)
        else:
            notes.append(JobEvent("Normal", "CommandIssued", f"{request.action}: {request.message}"))
    elif request.action != SYNC:
        notes.append(JobEvent("Warning" if request.burns_retry else "Normal", request.action, request.message))

    admitted = not wait_for_admission or (seen.podgroup_phase is not None and seen.podgroup_phase not in WAITING_PHASES)
    plan = _step(job, status, seen, request, admitted, now)
    if plan.status.phase != status.phase:
        notes.append(_phase_event(plan.status))
    if plan.status.phase in FINISHED_PHASES and job.ttl_seconds_after_finished is not None:
        finished = parse_time(plan.status.last_transition_time) or now
        expires = finished + timedelta(seconds=job.ttl_seconds_after_finished)
        if now >= expires:
            plan = replace(plan, delete_job=True)
        else:
            wait = _earliest(wait, (expires - now).total_seconds())
    return replace(plan, requeue_after_s=wait, events=tuple(notes), trigger=request.event, action=request.action)


# --- which event, which action ------------------------------------------------------------


def _find_request(job: JobSpec, status: JobStatus, seen: Observation, now: datetime) -> tuple[Request, float | None]:
    command = seen.command
    if command is not None and command.id != status.controlled_resources.get(COMMAND_RESOURCE):
        message = command.problem or f"command {command.id}"
        if not command.problem and command.action not in ACTIONS:
            message = f"unknown action {command.action!r} in command {command.id} (use one of {', '.join(ACTIONS)})"
        return Request("CommandIssued", command.action, message=message, command_id=command.id), None
    if status.phase not in ("Pending", "Running", "Restarting"):
        return Request(), None

    wait: float | None = None
    for event, task_name, pod, exit_code, since in _candidate_events(job, status, seen):
        policy = match_policy(job, task_name, event, exit_code)
        if policy is None:
            continue
        if policy.timeout_s:
            due = (since or now) + timedelta(seconds=policy.timeout_s)
            if now < due:
                wait = _earliest(wait, (due - now).total_seconds())
                continue
        return Request(event, policy.action, task_name, pod, _describe(event, task_name, pod, exit_code)), wait
    return Request(), wait


def _candidate_events(
    job: JobSpec, status: JobStatus, seen: Observation
) -> Iterable[tuple[str, str, str, int | None, datetime | None]]:
    """(event, task, pod, exit code, since) for everything a policy could react to, in a fixed order."""
    if seen.podgroup_phase == "Unknown":
        yield "Unknown", "", "", None, None
    if seen.job_updated:
        yield "JobUpdated", "", "", None, None
    order = {task.name: number for number, task in enumerate(job.tasks)}
    wanted = {f"{job.name}-{task.name}-{index}" for task in job.tasks for index in range(task.replicas)}
    current = sorted(
        # A pod scaled away (no longer wanted) ends without it being an event.
        (p for p in seen.pods if p.owned and p.version == status.version and not p.out_of_sync and p.name in wanted),
        key=lambda p: (order.get(p.task, len(order)), p.index if p.index is not None else -1, p.name),
    )
    for pod in current:
        if pod.gone or pod.deleting or (pod.disrupted and pod.phase != "Succeeded"):
            yield "PodEvicted", pod.task, pod.name, None, pod.since
        elif pod.phase == "Failed":
            yield "PodFailed", pod.task, pod.name, pod.exit_code, pod.since
        elif pod.phase == "Pending":
            yield "PodPending", pod.task, pod.name, None, pod.since
    present = [p for p in seen.pods if p.owned and not p.gone and not p.deleting]
    for task in job.tasks:
        mine = [p for p in present if p.task == task.name]
        if task.replicas and sum(p.phase == "Succeeded" for p in mine) >= task.replicas:
            yield "TaskCompleted", task.name, "", None, None
        restarts = sum(p.restarts for p in mine if p.phase in ("Pending", "Running"))
        if task.replicas and restarts >= task.max_retry:
            yield "TaskFailed", task.name, "", None, None


def match_policy(job: JobSpec, task_name: str, event: str, exit_code: int | None) -> LifecyclePolicy | None:
    """The policy for ``event`` (or ``exit_code``): the task's own first, then the job's; None: sync."""
    task = job.task(task_name) if task_name else None
    for policies in ((task.policies if task else ()), job.policies):
        for policy in policies:
            # A pending pod is normal for a while; only a policy with a timeout acts on it.
            if policy.events and policy.reacts_to(event) and (event != "PodPending" or policy.timeout_s):
                return policy
            if policy.exit_code is not None and exit_code is not None and policy.exit_code == exit_code:
                return policy
    return None


def _describe(event: str, task: str, pod: str, exit_code: int | None) -> str:
    if event == "PodFailed":
        code = f" with exit code {exit_code}" if exit_code is not None else ""
        return f"pod {pod} failed{code}"
    if event == "PodEvicted":
        return f"pod {pod} was evicted or deleted"
    if event == "PodPending":
        return f"pod {pod} stayed pending"
    if event == "TaskCompleted":
        return f"every pod of task {task} succeeded"
    if event == "TaskFailed":
        return f"task {task} restarted its containers too often"
    if event == "Unknown":
        return "the PodGroup's state is unknown (some of its pods run, some cannot)"
    return event


# --- the phases ---------------------------------------------------------------------------


def _step(job: JobSpec, status: JobStatus, seen: Observation, request: Request, admitted: bool, now: datetime) -> Plan:
    phase = status.phase
    action = request.action
    if phase in ("Pending", "Running", "Restarting"):
        if action == "RestartJob":
            return _kill_all(job, status, seen, now, retain=frozenset(), to="Restarting", request=request)
        if action in ("RestartTask", "RestartPod", "RestartPartition"):
            return _kill_target(job, status, seen, now, request)
        if action in _KILLING_PHASES:
            return _kill_all(job, status, seen, now, retain=SOFT_RETAIN, to=_KILLING_PHASES[action], request=request)
        return _sync(job, status, seen, now, admitted)
    if phase in ("Aborting", "Aborted") and action == "ResumeJob":
        return _kill_all(job, status, seen, now, retain=SOFT_RETAIN, to="Restarting", request=request)
    # Aborting, Aborted, Completing, Terminating and the finished phases: keep finished pods,
    # remove the rest, and settle once nothing is alive.
    return _kill_all(job, status, seen, now, retain=SOFT_RETAIN, to=None, request=request)


def _kill_all(
    job: JobSpec,
    status: JobStatus,
    seen: Observation,
    now: datetime,
    *,
    retain: frozenset[str],
    to: str | None,
    request: Request,
) -> Plan:
    """Delete every pod not in ``retain``; with ``to``, enter that phase under a new job version."""
    burns = to == "Restarting" and request.burns_retry and request.action != "ResumeJob"
    if burns and status.retry_count >= job.max_retry - 1:
        retain = SOFT_RETAIN  # the last try: keep what finished, for the post-mortem
    counts = _Counts()
    deletions: list[str] = []
    for pod in seen.pods:
        if pod.gone:
            continue
        if not pod.owned:
            deletions.append(pod.name)
        elif pod.deleting:
            counts.terminating += 1
        elif pod.phase in retain:
            counts.add(pod)
        else:
            deletions.append(pod.name)
            counts.terminating += 1

    new = _without_record(counts.apply(status), RESTART_RESOURCE)
    if to is not None:
        reason = "ResumeJob" if request.action == "ResumeJob" else request.event
        new = replace(new, version=status.version + 1, retry_count=status.retry_count + (1 if burns else 0))
        new = new.entering(to, now, reason=reason if to == "Restarting" else request.action, message=request.message)
        if to == "Restarting":
            marker = "job-keep-finished" if retain else "job"
            new = replace(new, controlled_resources={**new.controlled_resources, RESTART_RESOURCE: marker})
    elif status.phase in _SETTLE and not (new.pending or new.running or new.terminating):
        new = new.entering(_SETTLE[status.phase], now, reason=status.reason, message=status.message)
    final = new.phase in FINAL_PHASES or new.phase in _SETTLE
    if final:
        new = _without_plugin_records(new)
    return Plan(
        status=new,
        delete_pods=tuple(deletions),
        podgroup="delete",
        job_objects="delete" if final else "keep",
    )


def _kill_target(job: JobSpec, status: JobStatus, seen: Observation, now: datetime, request: Request) -> Plan:
    """RestartTask / RestartPod / RestartPartition: delete the task's pods (or the one pod, or the pods
    of its partition) and restart, job version kept."""
    counts = _Counts()
    deletions: list[str] = []
    targets: list[str] = []
    partition = _partition_of(job, seen, request) if request.action == "RestartPartition" else None
    for pod in seen.pods:
        if pod.gone:
            continue
        if request.action == "RestartTask":
            targeted = pod.task == request.task
        elif partition is not None:
            targeted = pod.task == request.task and pod.index is not None and pod.index // partition[1] == partition[0]
        else:
            targeted = pod.name == request.pod
        if not pod.owned:
            deletions.append(pod.name)
        elif targeted:
            # Deleted (and so marked out of sync) even when already going: the mark is what keeps
            # its eviction from triggering this restart again on the next pass.
            deletions.append(pod.name)
            targets.append(pod.name)
            counts.terminating += 1
        elif pod.deleting:
            counts.terminating += 1
        else:
            counts.add(pod)
    burns = request.burns_retry
    new = replace(counts.apply(status), retry_count=status.retry_count + (1 if burns else 0))
    new = new.entering("Restarting", now, reason=request.event, message=request.message)
    resources = {**new.controlled_resources, RESTART_RESOURCE: "pods:" + ",".join(sorted(targets))}
    new = replace(new, controlled_resources=resources)
    return Plan(status=new, delete_pods=tuple(deletions), podgroup="ensure", job_objects="keep")


def _partition_of(job: JobSpec, seen: Observation, request: Request) -> tuple[int, int] | None:
    """RestartPartition: (partition number, partition size) of the pod the event names; None when
    its task has no ``partitionPolicy`` (then the pod alone is restarted, as RestartPod)."""
    task = job.task(request.task)
    size = task.partition_size if task is not None else None
    pod = next((p for p in seen.pods if p.name == request.pod), None)
    if not size or pod is None or pod.index is None:
        return None
    return pod.index // size, size


def _sync(job: JobSpec, status: JobStatus, seen: Observation, now: datetime, admitted: bool) -> Plan:
    """Create what is missing, delete what should not be there, count, and move the phase by the counts."""
    wanted = {
        (task.name, index): f"{job.name}-{task.name}-{index}" for task in job.tasks for index in range(task.replicas)
    }
    wanted_names = set(wanted.values())
    # A restart of the whole job that the last pass could not finish: its older runs go entirely.
    wipe = status.phase == "Restarting" and status.controlled_resources.get(RESTART_RESOURCE) == "job"
    counts = _Counts()
    deletions: list[str] = []
    present: set[str] = set()
    for pod in seen.pods:
        if pod.gone:
            continue
        present.add(pod.name)
        if not pod.owned:
            deletions.append(pod.name)  # a leftover of an earlier Job of the same name blocks the name
        elif pod.deleting:
            counts.terminating += 1
        elif (
            pod.out_of_sync
            or pod.name not in wanted_names
            or ((pod.version or 0) < status.version and (wipe or pod.phase not in SOFT_RETAIN))
        ):
            # Marked by a kill that did not finish, scaled away, or alive from an older run.
            deletions.append(pod.name)
            counts.terminating += 1
        else:
            counts.add(pod)

    creations: list[tuple[str, int]] = []
    if status.phase in ("Pending", "Running") and admitted:
        for task in job.tasks:
            if not _dependencies_ready(job, task, seen):
                continue
            for index in range(task.replicas):
                if wanted[(task.name, index)] not in present:
                    creations.append((task.name, index))

    new = counts.apply(status)
    new = replace(
        new,
        controlled_resources={
            **{k: v for k, v in new.controlled_resources.items() if not k.startswith("plugin-")},
            **{f"plugin-{plugin.name}": plugin.name for plugin in job.plugins},
        },
    )
    new = _next_phase(job, new, now)
    if new.phase in FINAL_PHASES:
        # Finished by the counts: what is still running goes on the next step (a finished job's kill).
        return Plan(
            status=_without_plugin_records(new),
            delete_pods=tuple(deletions),
            podgroup="delete",
            job_objects="delete",
        )
    return Plan(
        status=new,
        create_pods=tuple(creations),
        delete_pods=tuple(deletions),
        podgroup="ensure",
        job_objects="ensure" if status.phase in ("Pending", "Running") else "keep",
    )


def _next_phase(job: JobSpec, status: JobStatus, now: datetime) -> JobStatus:
    """The phase the counts call for (Volcano's pending/running/restarting status updates)."""
    total = job.total_replicas
    if status.phase == "Pending":
        if job.min_available <= status.running + status.succeeded + status.failed:
            return status.entering("Running", now)
        return status
    if status.phase == "Restarting":
        restarted = _without_record(status, RESTART_RESOURCE)
        if status.reason not in NON_BURNING and status.reason != "ResumeJob" and status.retry_count >= job.max_retry:
            return restarted.entering(
                "Failed",
                now,
                reason="RetryLimitReached",
                message=f"restarted {status.retry_count} times, maxRetry is {job.max_retry} ({status.message})",
            )
        if total - status.terminating >= status.min_available:
            return restarted.entering("Pending", now)
        return status
    if status.phase != "Running" or total == 0:
        return status
    if job.min_success is not None and status.succeeded >= job.min_success:
        return status.entering("Completed", now, reason="MinSuccess", message=f"{status.succeeded} pods succeeded")
    if status.succeeded + status.failed == total:
        if job.min_available >= sum(task.min_available for task in job.tasks):
            for task in job.tasks:
                succeeded = status.task_status_count.get(task.name, {}).get("Succeeded", 0)
                if succeeded < task.min_available:
                    return status.entering(
                        "Failed",
                        now,
                        reason="TaskFailed",
                        message=f"task {task.name}: {succeeded} of its minimum {task.min_available} pods succeeded",
                    )
        if job.min_success is not None and status.succeeded < job.min_success:
            return status.entering(
                "Failed",
                now,
                reason="MinSuccess",
                message=f"only {status.succeeded} of {job.min_success} pods succeeded",
            )
        if status.succeeded >= job.min_available:
            return status.entering("Completed", now)
        return status.entering(
            "Failed", now, reason="PodsFailed", message=f"{status.failed} pods failed, {status.succeeded} succeeded"
        )
    if status.pending > total - job.min_available:
        return status.entering("Pending", now)
    return status


def _dependencies_ready(job: JobSpec, task: TaskSpec, seen: Observation) -> bool:
    """Whether ``task`` may start: the tasks it depends on have enough pods running (or done)."""
    if task.depends_on is None:
        return True

    def ready(name: str) -> bool:
        other = job.task(name)
        if other is None:
            return True
        up = sum(
            1
            for p in seen.pods
            if p.owned
            and p.task == name
            and not p.gone
            and not p.deleting
            and (p.phase == "Succeeded" or (p.phase == "Running" and p.ready))
        )
        return up >= other.min_available

    names = task.depends_on.names
    if len(names) > 1 and task.depends_on.iteration == "any":
        return any(ready(name) for name in names)
    return all(ready(name) for name in names)


# --- small helpers ------------------------------------------------------------------------


class _Counts:
    """Pods by phase, overall and per task, as the status reports them."""

    def __init__(self) -> None:
        self.by_phase: dict[str, int] = {}
        self.by_task: dict[str, dict[str, int]] = {}
        self.terminating = 0

    def add(self, pod: ObservedPod) -> None:
        phase = pod.phase if pod.phase in ("Pending", "Running", "Succeeded", "Failed") else "Unknown"
        self.by_phase[phase] = self.by_phase.get(phase, 0) + 1
        if pod.task:
            task = self.by_task.setdefault(pod.task, {})
            task[phase] = task.get(phase, 0) + 1

    def apply(self, status: JobStatus) -> JobStatus:
        return replace(
            status,
            pending=self.by_phase.get("Pending", 0),
            running=self.by_phase.get("Running", 0),
            succeeded=self.by_phase.get("Succeeded", 0),
            failed=self.by_phase.get("Failed", 0),
            unknown=self.by_phase.get("Unknown", 0),
            terminating=self.terminating,
            task_status_count={task: dict(sorted(phases.items())) for task, phases in sorted(self.by_task.items())},
        )


def _without_record(status: JobStatus, key: str) -> JobStatus:
    if key not in status.controlled_resources:
        return status
    kept = {k: v for k, v in status.controlled_resources.items() if k != key}
    return replace(status, controlled_resources=kept)


def _without_plugin_records(status: JobStatus) -> JobStatus:
    kept = {k: v for k, v in status.controlled_resources.items() if not k.startswith("plugin-")}
    return replace(status, controlled_resources=kept)


def _phase_event(status: JobStatus) -> JobEvent:
    bad = status.phase in ("Failed", "Aborted", "Aborting")
    message = f"job is {status.phase}" + (f": {status.message}" if status.message else "")
    return JobEvent("Warning" if bad else "Normal", status.phase, message)


def _earliest(current: float | None, candidate: float) -> float:
    return candidate if current is None else min(current, candidate)
