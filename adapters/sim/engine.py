"""A discrete-event simulation of a batch cluster over time, in which any scheduler decides.

Why it exists: to compare schedulers on the same workload, the cluster has to move — jobs arrive,
run, finish, fail, get evicted — and every scheduler has to see exactly the states its own
decisions lead to. The engine keeps the cluster as model objects (:mod:`vcsat.model`), builds a
:class:`~vcsat.model.Snapshot` every scheduling cycle, asks the scheduler (anything with the solve
interface ``(snapshot, policy) -> Decision``: ``vcsat.solver.solve`` or a baseline), validates the
decision with :func:`vcsat.solver.validator.check` and applies it. Better solvers give better results here
with no change to the engine.

What a job is: a :class:`JobSpec` — tasks of identical pods, a PodGroup with ``minMember`` (or lone
pods), a queue, a priority, an arrival time and a run time. A job *runs* (makes progress) only while
at least ``minMember`` of its pods (and every ``minTaskMember``) are bound: distributed training
waits for all its workers. Its run time counts from that moment; it completes when the run time has
passed, and all its pods succeed at once.

Events and rules (simulated seconds; the wall time of a decision is measured and reported, it does
not move the simulated clock):

- **cycles** every ``cycle_period`` s; a cycle is skipped when nothing changed since the last one
  (a deterministic scheduler would decide the same) or nothing is pending;
- **partial placement**: a job with some pods bound but not enough to run is *partly placed*; after
  ``gang_timeout`` s in that state it times out (its pods waited for peers that never came, as a
  TensorFlow worker gives up on its parameter servers): all its pods are deleted and created again,
  and it counts one restart;
- **evictions** (and failed nodes) restart the whole job: every pod back to pending, progress lost
  (Volcano Job's ``PodEvicted → RestartJob``); nominated pods are bound at once, as the victims'
  room is free when the decision is applied (no termination grace in the simulation);
- **restarts** beyond ``max_restarts`` fail the job (Kubernetes Job's ``backoffLimit``);
- **giving up**: with ``drop_unplaced_after`` set, a job still waiting that many cycles after its
  arrival is dropped as unplaced (the FGD experiment: a pod that does not fit when it arrives never
  will, as nothing leaves);
- **node failures** (``node_mtbf``): a node goes NotReady for ``node_repair`` s; its pods fail.

Everything is deterministic for a fixed seed (the workload's and the engine's random streams are
separate); decisions that fail validation are not applied and are counted.
"""

from __future__ import annotations

import heapq
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vcsat.model import (
    Decision,
    HyperNode,
    Node,
    NodeSelectorTerm,
    Pod,
    PodGroup,
    Policy,
    Queue,
    Snapshot,
)
from vcsat.model import resources as res
from vcsat.model.cluster import DEFAULT_QUEUE
from vcsat.solver import check

SolveFn = Callable[[Snapshot, Policy], Decision]

# --- what is simulated ------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskSpec:
    """Identical pods of one task (``volcano.sh/task-spec``)."""

    name: str
    replicas: int
    requests: dict[str, int]
    """Per pod, in model units (cpu millicores, bytes, counts), ``pods: 1`` included."""
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: tuple[NodeSelectorTerm, ...] = ()

    @property
    def gpu_milli(self) -> int:
        """GPU thousandths one pod takes: whole GPUs × 1000, or its share."""
        return self.requests.get(res.GPU, 0) * 1000 + self.requests.get(res.GPU_MILLI, 0)


@dataclass(frozen=True)
class JobSpec:
    name: str
    tasks: tuple[TaskSpec, ...]
    queue: str = DEFAULT_QUEUE
    namespace: str = "default"
    priority: int = 0
    arrival: float = 0.0
    duration: float = math.inf
    """Seconds of running (with ``minMember`` pods bound) until it completes; inf: never."""
    min_member: int | None = None
    """None: every pod."""
    min_task_member: dict[str, int] = field(default_factory=dict)
    podgroup: bool = True
    """False for a lone pod (a job of one task of one replica, no PodGroup)."""
    kind: str = ""
    """A label for reports (``1gpu``, ``8gpu×4``, ``tf``, ...)."""
    pod_offsets: tuple[float, ...] = ()
    """Per pod (in task order), seconds after arrival it is created; empty means all at arrival."""

    @property
    def pods(self) -> int:
        return sum(task.replicas for task in self.tasks)

    @property
    def needed(self) -> int:
        return self.pods if self.min_member is None else self.min_member

    @property
    def gpu_milli(self) -> int:
        return sum(task.gpu_milli * task.replicas for task in self.tasks)


@dataclass(frozen=True)
class Workload:
    name: str
    nodes: tuple[Node, ...]
    jobs: tuple[JobSpec, ...]
    queues: tuple[Queue, ...] = ()
    hypernodes: tuple[HyperNode, ...] = ()
    fixed_pods: tuple[Pod, ...] = ()
    """Load of other schedulers (DaemonSets): bound, never ours to place or evict."""
    description: str = ""


@dataclass(frozen=True)
class SimOptions:
    cycle_period: float = 60.0
    """Seconds between cycles. Volcano's schedulePeriod is 1 s; a minute keeps long simulations
    cheap while still short against run times of minutes to hours."""
    gang_timeout: float | None = 600.0
    max_restarts: int = 6
    drop_unplaced_after: int | None = None
    horizon: float = math.inf
    node_mtbf: float | None = None
    """Mean seconds between failures of one node (exponential); None: nodes never fail."""
    node_repair: float = 600.0
    seed: int = 0
    check: bool = True


@dataclass(frozen=True)
class Scheduler:
    name: str
    solve: SolveFn
    policy: Policy
    check_policy: Policy
    """What its decisions are validated under (no gangs for the default Kubernetes scheduler)."""
    inqueue_timeout_s: float | None = None
    """Its admission sends a group Inqueue this long with nothing placed back to Pending (vcsat's
    ``Policy.inqueue_timeout_s``): a cycle is due when such a timeout falls due, even if nothing
    else changed."""


# --- what is recorded ---------------------------------------------------------------------------


@dataclass
class CycleRecord:
    time: float
    seconds: float
    status: str
    objective: float
    bound: float
    pending_pods: int
    bindings: int
    evictions: int
    violations: int


@dataclass
class Sample:
    """The cluster right after the events of one instant."""

    time: float
    gpu_milli: int
    """GPU thousandths held by bound pods of ours."""
    partial_gpu_milli: int
    """Of those, held by jobs that are partly placed (waiting, not running)."""
    queue_gpu_milli: dict[str, int]
    queue_demand_milli: dict[str, int]
    """Per queue: GPU thousandths held plus waiting (arrived, not finished)."""
    arrived_gpu_milli: int
    """GPU thousandths of every pod arrived so far (the FGD experiment's x axis)."""
    pending_pods: int
    running_pods: int
    partial_jobs: int


@dataclass
class JobRecord:
    spec: JobSpec
    pod_keys: list[str]
    started: float | None = None
    """First time it ran (``minMember`` bound)."""
    finished: float | None = None
    failed: str = ""
    """Why it ended without completing: ``timeout`` (or another restart reason) past
    ``max_restarts``, ``unplaced`` (given up), ``stuck`` (waiting when nothing could change any
    more), ``horizon``; empty otherwise."""
    restarts: int = 0
    timeouts: int = 0
    evicted: int = 0
    remaining: float = 0.0
    ready_since: float | None = None
    partial_since: float | None = None
    epoch: int = 0
    waited_cycles: int = 0
    placement: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    """Where its pods were when it first ran: (node, GPU indices) per pod."""

    @property
    def active(self) -> bool:
        """Arrived and neither completed nor failed."""
        return self.finished is None and not self.failed


@dataclass
class SimResult:
    scheduler: str
    workload: str
    options: SimOptions
    nodes: tuple[Node, ...]
    hypernodes: tuple[HyperNode, ...]
    queues: tuple[Queue, ...]
    gpu_capacity_milli: int
    jobs: list[JobRecord]
    cycles: list[CycleRecord]
    samples: list[Sample]
    evictions: int = 0
    rejected: int = 0
    """Decisions not applied because the validator found a broken rule."""
    first_violation: str = ""
    errors: int = 0
    """Cycles whose scheduler raised instead of deciding (nothing applied)."""
    first_error: str = ""
    skipped_cycles: int = 0
    wall_seconds: float = 0.0
    end_time: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


# --- the engine ---------------------------------------------------------------------------------

_ARRIVE, _COMPLETE, _CYCLE, _FAIL, _REPAIR = range(5)


class Engine:
    def __init__(self, workload: Workload, scheduler: Scheduler, options: SimOptions | None = None) -> None:
        self.workload = workload
        self.scheduler = scheduler
        self.options = options or SimOptions()
        self.rng = random.Random(f"engine:{self.options.seed}")
        self.nodes: list[Node] = list(workload.nodes)
        self.node_at = {node.name: i for i, node in enumerate(self.nodes)}
        queues = list(workload.queues)
        if all(q.name != DEFAULT_QUEUE for q in queues):
            queues.insert(0, Queue(name=DEFAULT_QUEUE))
        self.queues = tuple(queues)
        self.pods: dict[str, Pod] = {}
        self.groups: dict[str, PodGroup] = {}
        self.job_of_pod: dict[str, JobRecord] = {}
        self.jobs: list[JobRecord] = []
        self.events: list[tuple[float, int, int, Any]] = []
        self.seq = 0
        self.generation = 0
        self.dirty = True
        self.now = 0.0
        self.last_cycle = -math.inf
        """When the scheduler last decided."""
        self.arrived_gpu_milli = 0
        self.unfinished = 0
        self.result = SimResult(
            scheduler=scheduler.name,
            workload=workload.name,
            options=self.options,
            nodes=workload.nodes,
            hypernodes=workload.hypernodes,
            queues=self.queues,
            gpu_capacity_milli=sum(node.gpus for node in workload.nodes) * 1000,
            jobs=self.jobs,
            cycles=[],
            samples=[],
        )

    # --- event plumbing -------------------------------------------------------------------------

    def _push(self, when: float, kind: int, payload: Any = None) -> None:
        self.seq += 1
        heapq.heappush(self.events, (when, kind, self.seq, payload))

    def run(self, progress: Callable[[float, float], None] | None = None) -> SimResult:
        """Simulate until every job has ended (or the horizon, or nothing can change any more);
        ``progress(done, total)`` is called after every cycle with the jobs settled so far."""
        started = time.monotonic()
        for spec in sorted(self.workload.jobs, key=lambda j: (j.arrival, j.name)):
            self._push(spec.arrival, _ARRIVE, spec)
        self.unfinished = len(self.workload.jobs)
        if self.options.node_mtbf:
            for node in self.nodes:
                self._push(self.rng.expovariate(1 / self.options.node_mtbf), _FAIL, node.name)
        first = min((j.arrival for j in self.workload.jobs), default=0.0)
        self._push(self._next_cycle_at(first), _CYCLE)
        total = max(1, len(self.workload.jobs))
        while self.events and self.unfinished > 0:
            when, kind, _, payload = heapq.heappop(self.events)
            if when > self.options.horizon:
                break
            self.now = when
            if kind == _ARRIVE:
                self._arrive(payload)
            elif kind == _COMPLETE:
                self._complete(*payload)
            elif kind == _FAIL:
                self._fail_node(payload)
            elif kind == _REPAIR:
                self._repair_node(payload)
            else:
                self._cycle()
                if progress is not None:
                    progress(self._settled(), total)
                if self.unfinished > 0 and not self._quiescent():
                    self._push(self._following_cycle(), _CYCLE)
            if not self.events or self.events[0][0] > when:
                self._sample()
        self._sample()
        stopped = "horizon" if self.events else "stuck"
        for job in self.jobs:
            if job.active and (math.isfinite(job.spec.duration) or job.ready_since is None):
                job.failed = stopped
        self.result.end_time = self.now
        self.result.wall_seconds = time.monotonic() - started
        return self.result

    def _settled(self) -> int:
        """Jobs whose fate is known: ended, or running for ever (the FGD experiment's pods)."""
        return sum(
            1 for job in self.jobs if not job.active or (job.ready_since is not None and math.isinf(job.spec.duration))
        )

    def _quiescent(self) -> bool:
        """No cycle can ever change anything again: no event is due, no partly placed job can time
        out, and either nothing waits or the last cycle changed nothing (what waits never fits, and
        a deterministic scheduler would decide the same forever). Jobs that run forever, as in the
        FGD experiment, end the simulation here."""
        if any(kind != _CYCLE for _, kind, _, _ in self.events):
            return False
        if self.options.gang_timeout is not None and any(j.partial_since is not None for j in self.jobs):
            return False
        if self.options.drop_unplaced_after is not None and any(pod.pending for pod in self.pods.values()):
            return False
        if math.isfinite(self._admission_timeout_due()):
            return False
        return not self.dirty or not any(pod.pending for pod in self.pods.values())

    def _admission_timeout_due(self) -> float:
        """The earliest moment after the last decision at which an Inqueue group's admission times
        out (``inf``: none will). Whether it has pods placed is left to the scheduler to judge."""
        timeout = self.scheduler.inqueue_timeout_s
        if timeout is None:
            return math.inf
        due = (
            group.inqueue_since + timeout
            for group in self.groups.values()
            if group.phase == "Inqueue" and group.inqueue_since is not None
        )
        return min((moment for moment in due if moment > self.last_cycle), default=math.inf)

    def _next_cycle_at(self, when: float) -> float:
        period = self.options.cycle_period
        return math.ceil(when / period) * period

    def _following_cycle(self) -> float:
        """The next cycle; when nothing waits, jump to the one after the next event."""
        period = self.options.cycle_period
        following = self.now + period
        waiting = any(pod.pending for pod in self.pods.values()) or any(
            job.partial_since is not None for job in self.jobs
        )
        if waiting:
            return following
        upcoming = [e[0] for e in self.events if e[1] != _CYCLE]
        if not upcoming:
            return following
        return max(following, self._next_cycle_at(min(upcoming)))

    # --- arrivals and completions ---------------------------------------------------------------

    def _arrive(self, spec: JobSpec) -> None:
        job = JobRecord(spec=spec, pod_keys=[], remaining=spec.duration)
        self.jobs.append(job)
        if spec.podgroup:
            self.groups[f"{spec.namespace}/{spec.name}"] = self._podgroup(spec)
        self._create_pods(job)
        self.arrived_gpu_milli += spec.gpu_milli
        self.dirty = True

    def _podgroup(self, spec: JobSpec) -> PodGroup:
        needed = spec.needed
        minimum: dict[str, int] = {}
        for task in spec.tasks:
            take = min(task.replicas, needed)
            needed -= take
            for name, amount in task.requests.items():
                if name != res.PODS:
                    minimum[name] = minimum.get(name, 0) + amount * take
        return PodGroup(
            namespace=spec.namespace,
            name=spec.name,
            min_member=spec.needed,
            min_task_member=dict(spec.min_task_member),
            queue=spec.queue,
            priority=spec.priority,
            min_resources=minimum,
            phase="Pending",
            created=spec.arrival,
        )

    def _create_pods(self, job: JobRecord) -> None:
        spec = job.spec
        keys: list[str] = []
        position = 0
        for task in spec.tasks:
            for replica in range(task.replicas):
                offset = spec.pod_offsets[position] if position < len(spec.pod_offsets) else 0.0
                name = spec.name if not spec.podgroup else f"{spec.name}-{task.name}-{replica}"
                pod = Pod(
                    namespace=spec.namespace,
                    name=name,
                    uid=f"{spec.name}-{job.restarts}-{position}",
                    requests=dict(task.requests),
                    priority=spec.priority,
                    node_selector=dict(task.node_selector),
                    affinity=task.affinity,
                    group=f"{spec.namespace}/{spec.name}" if spec.podgroup else None,
                    task=task.name,
                    created=self.now + offset,
                )
                self.pods[pod.key] = pod
                self.job_of_pod[pod.key] = job
                keys.append(pod.key)
                position += 1
        job.pod_keys = keys
        job.waited_cycles = 0

    def _complete(self, job: JobRecord, epoch: int) -> None:
        if job.epoch != epoch or not job.active:
            return
        job.finished = self.now
        self._remove_job(job)

    def _remove_job(self, job: JobRecord) -> None:
        for key in job.pod_keys:
            self.pods.pop(key, None)
            self.job_of_pod.pop(key, None)
        self.groups.pop(f"{job.spec.namespace}/{job.spec.name}", None)
        job.ready_since = job.partial_since = None
        job.epoch += 1
        self.unfinished -= 1
        self.dirty = True
        self.generation += 1

    def _restart(self, job: JobRecord, why: str) -> None:
        """Delete the job's pods and create them again; fail it past ``max_restarts``."""
        job.restarts += 1
        if why == "timeout":
            job.timeouts += 1
        if job.restarts > self.options.max_restarts:
            job.failed = why
            self._remove_job(job)
            return
        for key in job.pod_keys:
            self.pods.pop(key, None)
            self.job_of_pod.pop(key, None)
        job.ready_since = job.partial_since = None
        job.remaining = job.spec.duration
        job.epoch += 1
        group_key = f"{job.spec.namespace}/{job.spec.name}"
        if group_key in self.groups:
            self.groups[group_key] = self.groups[group_key].model_copy(
                update={"phase": "Pending", "inqueue_since": None}
            )
        self._create_pods(job)
        self.dirty = True
        self.generation += 1

    # --- nodes ------------------------------------------------------------------------------------

    def _fail_node(self, name: str) -> None:
        i = self.node_at[name]
        self.nodes[i] = self.nodes[i].model_copy(update={"ready": False})
        hit = {self.job_of_pod[p.key].spec.name: self.job_of_pod[p.key] for p in self._bound_on(name)}
        for job in hit.values():
            self._restart(job, "node-failure")
        self._push(self.now + self.options.node_repair, _REPAIR, name)
        self.dirty = True
        self.generation += 1

    def _repair_node(self, name: str) -> None:
        i = self.node_at[name]
        self.nodes[i] = self.nodes[i].model_copy(update={"ready": True})
        if self.options.node_mtbf:
            self._push(self.now + self.rng.expovariate(1 / self.options.node_mtbf), _FAIL, name)
        self.dirty = True
        self.generation += 1

    def _bound_on(self, node: str) -> list[Pod]:
        return [pod for pod in self.pods.values() if pod.node_name == node]

    # --- one scheduling cycle -------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return Snapshot(
            nodes=tuple(self.nodes),
            pods=(*self.workload.fixed_pods, *self.pods.values()),
            podgroups=tuple(self.groups.values()),
            queues=self.queues,
            hypernodes=self.workload.hypernodes,
            generation=self.generation,
            now=self.now,
        )

    def _cycle(self) -> None:
        self._timeouts()
        self._give_up()
        pending = sum(1 for pod in self.pods.values() if pod.pending)
        if not self.dirty and self._admission_timeout_due() <= self.now:
            self.dirty = True  # a group's Inqueue time ran out since the last decision
        if pending == 0 or not self.dirty:
            if pending:
                self.result.skipped_cycles += 1
            return
        snapshot = self.snapshot()
        started = time.perf_counter()
        try:
            decision = self.scheduler.solve(snapshot, self.scheduler.policy)
        except Exception as error:  # a scheduler bug: count it, keep the state, go on
            self._failed_cycle(snapshot, pending, time.perf_counter() - started, error)
            return
        seconds = time.perf_counter() - started
        self.last_cycle = self.now
        violations = []
        if self.options.check:
            violations = check(snapshot, decision, self.scheduler.check_policy)
        self.dirty = False
        record = CycleRecord(
            time=self.now,
            seconds=seconds,
            status=decision.solver.status,
            objective=decision.solver.objective,
            bound=decision.solver.bound,
            pending_pods=pending,
            bindings=len(decision.bindings) + len(decision.nominations),
            evictions=len(decision.evictions),
            violations=len(violations),
        )
        self.result.cycles.append(record)
        if violations:
            self.result.rejected += 1
            self.result.first_violation = self.result.first_violation or str(violations[0])
            return
        self._apply(decision)
        for job in self.jobs:
            waiting = job.active and job.ready_since is None
            if waiting and any(self.pods[k].pending for k in job.pod_keys if k in self.pods):
                job.waited_cycles += 1

    def _failed_cycle(self, snapshot: Snapshot, pending: int, seconds: float, error: Exception) -> None:
        """A decision that raised: nothing is applied; the first failing snapshot is kept so the
        failure can be reproduced (``Snapshot.model_validate_json``)."""
        self.dirty = False
        self.result.cycles.append(CycleRecord(self.now, seconds, "ERROR", 0.0, 0.0, pending, 0, 0, 0))
        self.result.errors += 1
        if not self.result.first_error:
            self.result.first_error = f"{type(error).__name__}: {error}"
            self.result.extra["error_snapshot"] = snapshot.model_dump_json()

    def _apply(self, decision: Decision) -> None:
        touched: dict[str, JobRecord] = {}
        for eviction in decision.evictions:
            job = self.job_of_pod.get(eviction.pod)
            if job is not None and job.active:
                touched.pop(job.spec.name, None)
                job.evicted += 1
                self.result.evictions += 1
                self._restart(job, "eviction")
        placements = [(b.pod, b.node, b.gpus) for b in decision.bindings]
        placements += [(n.pod, n.node, n.gpus) for n in decision.nominations]
        for key, node, gpus in placements:
            pod = self.pods.get(key)
            if pod is None or not pod.pending:
                continue  # its job was restarted by an eviction in this same decision
            self.pods[key] = pod.model_copy(
                update={"node_name": node, "phase": "Running", "gpu_ids": tuple(gpus) if gpus else None}
            )
            job = self.job_of_pod[key]
            touched[job.spec.name] = job
        if placements or decision.evictions:
            self.dirty = True
            self.generation += 1
        for outcome in decision.podgroups:
            group = self.groups.get(outcome.podgroup)
            if group is not None and group.phase != outcome.phase:
                since = self.now if outcome.phase == "Inqueue" else None  # as the scheduler's Inqueued condition
                self.groups[outcome.podgroup] = group.model_copy(
                    update={"phase": outcome.phase, "inqueue_since": since}
                )
        for job in touched.values():
            self._update_readiness(job)

    def _update_readiness(self, job: JobRecord) -> None:
        bound = [self.pods[k] for k in job.pod_keys if k in self.pods and self.pods[k].bound]
        spec = job.spec
        per_task: dict[str, int] = {}
        for pod in bound:
            per_task[pod.task] = per_task.get(pod.task, 0) + 1
        ready = len(bound) >= spec.needed and all(
            per_task.get(task, 0) >= n for task, n in spec.min_task_member.items()
        )
        if ready and job.ready_since is None:
            job.ready_since = self.now
            job.partial_since = None
            if job.started is None:
                job.started = self.now
                job.placement = [(p.node_name or "", p.gpu_ids or ()) for p in bound]
            if math.isfinite(job.remaining):
                self._push(self.now + job.remaining, _COMPLETE, (job, job.epoch))
        elif not ready and bound and job.partial_since is None:
            job.partial_since = self.now

    def _timeouts(self) -> None:
        timeout = self.options.gang_timeout
        if timeout is None:
            return
        for job in list(self.jobs):
            if job.partial_since is not None and self.now - job.partial_since >= timeout:
                self._restart(job, "timeout")

    def _give_up(self) -> None:
        limit = self.options.drop_unplaced_after
        if limit is None:
            return
        for job in self.jobs:
            if job.active and job.ready_since is None and job.waited_cycles >= limit:
                job.failed = "unplaced"
                self._remove_job(job)

    # --- samples ----------------------------------------------------------------------------------

    def _sample(self) -> None:
        group_queue = {key: group.queue for key, group in self.groups.items()}
        held: dict[str, int] = {}
        demand: dict[str, int] = {}
        total = partial = pending = running = 0
        partial_jobs = {job.spec.name for job in self.jobs if job.partial_since is not None}
        for pod in self.pods.values():
            milli = pod.gpus * 1000 + (pod.gpu_milli if pod.gpus == 0 else 0)
            queue = group_queue.get(pod.group, DEFAULT_QUEUE) if pod.group else DEFAULT_QUEUE
            demand[queue] = demand.get(queue, 0) + milli
            if pod.bound:
                running += 1
                total += milli
                held[queue] = held.get(queue, 0) + milli
                if self.job_of_pod[pod.key].spec.name in partial_jobs:
                    partial += milli
            elif pod.pending:
                pending += 1
        sample = Sample(
            time=self.now,
            gpu_milli=total,
            partial_gpu_milli=partial,
            queue_gpu_milli=held,
            queue_demand_milli=demand,
            arrived_gpu_milli=self.arrived_gpu_milli,
            pending_pods=pending,
            running_pods=running,
            partial_jobs=len(partial_jobs),
        )
        samples = self.result.samples
        if samples and samples[-1].time == self.now:
            samples[-1] = sample
        elif not samples or _changed(samples[-1], sample):
            samples.append(sample)


def _changed(before: Sample, after: Sample) -> bool:
    """Whether a sample says anything its predecessor did not (the step function holds between)."""
    return any(getattr(before, name) != getattr(after, name) for name in _SAMPLE_FIELDS)


_SAMPLE_FIELDS = tuple(name for name in Sample.__dataclass_fields__ if name != "time")


def simulate(
    workload: Workload,
    scheduler: Scheduler,
    options: SimOptions | None = None,
    progress: Callable[[float, float], None] | None = None,
) -> SimResult:
    """Run one scheduler over one workload (see the module docstring)."""
    return Engine(workload, scheduler, options).run(progress)
