"""Volcano's greedy ``enqueue`` + ``allocate`` under its default configuration, as a baseline.

Source (read, not copied): volcano-sh/volcano ``pkg/scheduler/actions/{enqueue,allocate}`` and the
plugins of the default ``volcano-scheduler.conf`` of the Helm chart (tiers ``priority, gang,
conformance`` / ``overcommit, drf, predicates, proportion, nodeorder, binpack``):

- **enqueue**: a PodGroup still ``Pending`` becomes ``Inqueue`` when it names no ``minResources`` or
  when they fit both the overcommit plugin's idle room (``overcommit_factor`` × the cluster's
  allocatable, less what runs and what is already Inqueue) and the proportion plugin's queue room
  (``minResources + allocated + inqueue <= realCapability``). Only Inqueue jobs are allocated.
- **proportion**: each queue's ``deserved`` by water-filling the cluster's total over queue weights,
  capped by ``realCapability`` (capability, and the total less other queues' guarantees) and by
  the queue's request (what it holds plus what it waits for), raised to its guarantee; its share
  is ``max_r allocated_r / deserved_r``. Queues are served lowest share first; a queue whose
  allocation reached its deserved amount in every resource is *overused* and gets nothing more this
  cycle; a task that would push its queue past ``realCapability`` is skipped.
- **job order**: priority plugin (higher first), gang (jobs not yet ready first), drf (lower
  dominant share of the cluster first), then creation time and name. Tasks: priority, then age.
- **allocate**: for the chosen job, each task in turn goes through the predicates and the room
  check; a task with no feasible node ends the job's turn. Among feasible nodes the highest score
  of nodeorder (least-allocated × 1 + balanced-allocation × 1 + taint-toleration × 3; the other
  nodeorder plugins score every node the same for these pods) plus binpack (cpu and memory × 1)
  wins, a tie broken at random (Volcano's ``SelectBestNode``; here a generator seeded by the
  policy's ``random_seed`` and the snapshot generation, so runs repeat). Once the job is ready
  (``minMember`` placed) and has more pods, it goes back into its queue and waits for its next turn.
  The job's placements are committed when it is ready and discarded otherwise (``Statement``).

**volcano-gpu** (:func:`solve_gpu`) is the same scheduler configured as a GPU cluster's operator
would: binpack given the arguments ``binpack.weight: 10``, ``binpack.cpu: 1``, ``binpack.memory: 1``,
``binpack.resources: nvidia.com/gpu``, ``binpack.resources.nvidia.com/gpu: 10`` (Volcano's binpack
plugin, ``pkg/scheduler/plugins/binpack``: the score is the weighted mean of each weighted resource's
used share after placement, times ``MaxNodeScore`` × ``binpack.weight``), so that GPU pods fill the
nodes whose GPUs are already in use before they open whole ones, and binpack outweighs nodeorder's
spreading. A GPU share (``vcsat.io/gpu-milli``) asks no ``nvidia.com/gpu``, so it is packed by cpu
and memory only, as Volcano's binpack sees only the resources it is given.

**Admission timeout**: Volcano has no equivalent of vcsat's ``Policy.inqueue_timeout_s``. An Inqueue
PodGroup stays Inqueue until it has ``minMember`` pods scheduled (``getPodGroupPhase`` in
``pkg/scheduler/framework/session.go`` only moves a group that is not Inqueue back to Pending); the
nearest setting, the sla plugin's ``sla-waiting-time``, works the other way round: a job waiting
longer than it is admitted at once and room is reserved for it. So neither baseline times out.

Where this differs, and why: no pipelining onto room that terminating pods will free (the decision
format has no such placement; it waits for the next cycle instead); GPU indices are not chosen by
Volcano at all — whole GPUs get the lowest free indices, as the device plugin does, and a GPU share
(``vcsat.io/gpu-milli``) the first GPU with room, as Volcano's gpushare predicate does when enabled;
fairness counts a GPU share as thousandths of ``nvidia.com/gpu``; Queue capability and Closed
queues are kept exactly as the validator wants them. The Policy's plugin switches (``gang``,
``priority``, ``drf``, ``proportion``, ``enqueue``, ``overcommit_factor``) turn the matching parts off.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from vcsat.model import Decision, Pod, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.solver.baselines import scoring
from vcsat.solver.baselines.jobs import Job, pending_jobs
from vcsat.solver.baselines.outcome import Reason, decision
from vcsat.solver.baselines.state import ClusterState, NodeRoom, Statement, lowest_free_gpus
from vcsat.solver.validator.check import gang_key

NAME = "volcano"
GPU_NAME = "volcano-gpu"
TAINT_TOLERATION_WEIGHT = 3


@dataclass(frozen=True)
class Binpack:
    """The binpack plugin's arguments: ``binpack.weight`` and the weight of each resource."""

    weight: int
    resources: Mapping[str, int]


DEFAULT_BINPACK = Binpack(1, {res.CPU: 1, res.MEMORY: 1})
"""The Helm chart's conf gives binpack no arguments: weight 1, cpu and memory 1, no extended resource."""
GPU_BINPACK = Binpack(10, {res.CPU: 1, res.MEMORY: 1, res.GPU: 10})
"""A GPU cluster's binpack: GPUs weigh ten times cpu and memory, and binpack ten times nodeorder."""


def fair_vector(requests: Mapping[str, int]) -> dict[str, int]:
    """A pod's requests as proportion and drf count them: without ``pods``, with GPUs in thousandths
    (Volcano keeps scalar resources in milli-units) and a GPU share folded into them."""
    out: dict[str, int] = {}
    for name, amount in requests.items():
        if name == res.PODS or amount <= 0:
            continue
        if name == res.GPU:
            out[res.GPU] = out.get(res.GPU, 0) + amount * 1000
        elif name == res.GPU_MILLI:
            out[res.GPU] = out.get(res.GPU, 0) + amount
        else:
            out[name] = out.get(name, 0) + amount
    return out


def _le(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    """``Resource.LessEqual`` with zero for absent names: every amount of ``a`` within ``b``."""
    return all(amount <= b.get(name, 0) for name, amount in a.items())


_EMPTY = 1e-6
"""Below this a remaining amount counts as none (``Resource.IsEmpty``; floats never reach 0)."""


def _le_unbounded(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    """``Resource.LessEqual`` with infinity for names absent in ``b``."""
    return all(amount <= b.get(name, float("inf")) for name, amount in a.items())


def _share(allocated: float, deserved: float) -> float:
    """``helpers.Share``."""
    if deserved == 0:
        return 0.0 if allocated == 0 else 1.0
    return allocated / deserved


@dataclass
class QueueAttr:
    """The proportion plugin's per-queue state."""

    name: str
    weight: int
    allocated: dict[str, float] = field(default_factory=dict)
    request: dict[str, float] = field(default_factory=dict)
    inqueue: dict[str, float] = field(default_factory=dict)
    deserved: dict[str, float] = field(default_factory=dict)
    guarantee: dict[str, float] = field(default_factory=dict)
    capability: dict[str, float] | None = None
    real_capability: dict[str, float] = field(default_factory=dict)

    @property
    def share(self) -> float:
        return max((_share(self.allocated.get(r, 0), d) for r, d in self.deserved.items()), default=0.0)

    def overused(self) -> bool:
        return _le(self.deserved, self.allocated)


def _add(target: dict[str, float], amounts: Mapping[str, float], sign: int = 1) -> None:
    for name, amount in amounts.items():
        target[name] = target.get(name, 0) + sign * amount


class Proportion:
    """Deserved shares, queue order, overuse and queue room (the proportion plugin)."""

    def __init__(self, snapshot: Snapshot, state: ClusterState, total: dict[str, float]) -> None:
        self.total = total
        self.attrs: dict[str, QueueAttr] = {}
        total_guarantee: dict[str, float] = {}
        for queue in state.queues.queues.values():
            _add(total_guarantee, fair_vector(queue.guarantee))
        for pod in snapshot.pods:
            if not pod.managed or not (pod.bound or pod.pending):
                continue
            name = state.queues.queue_of(pod)
            if name is None or name not in state.queues.queues:
                continue
            attr = self.attrs.get(name)
            if attr is None:
                queue = state.queues.queues[name]
                guarantee: dict[str, float] = dict(fair_vector(queue.guarantee))
                real = dict(total)
                _add(real, total_guarantee, -1)
                _add(real, guarantee)
                capability: dict[str, float] | None = None
                if queue.capability is not None:
                    capability = dict(fair_vector(queue.capability))
                    real = {r: min(v, capability.get(r, float("inf"))) for r, v in real.items()}
                attr = self.attrs[name] = QueueAttr(
                    name, queue.weight, guarantee=guarantee, capability=capability, real_capability=real
                )
            vector = fair_vector(pod.requests)
            _add(attr.request, vector)
            if pod.bound:
                _add(attr.allocated, vector)
        self._water_fill()

    def _water_fill(self) -> None:
        """Volcano's own deserved loop, round by round on float vectors, as the proportion plugin
        runs it: a queue leaves the loop once its whole request fits or any resource passes its
        realCapability, so resources are not filled independently, and the rounds stop on float
        equality. The baseline must decide as Volcano does, quirks included, so this stays Volcano's
        loop rather than the exact per-resource water-filling of :mod:`vcsat.solver.shares.water`."""
        remaining = dict(self.total)
        meet: set[str] = set()
        while True:
            total_weight = sum(a.weight for n, a in self.attrs.items() if n not in meet)
            if total_weight == 0:
                break
            before = dict(remaining)
            increased: dict[str, float] = {}
            decreased: dict[str, float] = {}
            for name in sorted(self.attrs):
                attr = self.attrs[name]
                if name in meet:
                    continue
                old = dict(attr.deserved)
                _add(attr.deserved, {r: v * attr.weight / total_weight for r, v in remaining.items()})
                if not _le_unbounded(attr.deserved, attr.real_capability):
                    attr.deserved = _min(_min(attr.deserved, attr.real_capability), attr.request)
                    meet.add(name)
                elif _le(attr.request, attr.deserved):
                    attr.deserved = _min(attr.deserved, attr.request)
                    meet.add(name)
                else:
                    attr.deserved = {r: min(v, attr.request.get(r, 0)) for r, v in attr.deserved.items()}
                attr.deserved = _max(attr.deserved, attr.guarantee)
                for r in set(attr.deserved) | set(old):
                    diff = attr.deserved.get(r, 0) - old.get(r, 0)
                    if diff > 0:
                        increased[r] = increased.get(r, 0) + diff
                    elif diff < 0:
                        decreased[r] = decreased.get(r, 0) - diff
            _add(remaining, increased, -1)
            _add(remaining, decreased)
            if all(v <= _EMPTY for v in remaining.values()) or remaining == before:
                break

    def allocatable(self, queue: str, vector: Mapping[str, float]) -> bool:
        """``AllocatableFn``: the queue stays within ``realCapability`` in the resources asked."""
        attr = self.attrs.get(queue)
        if attr is None:
            return True
        return all(
            attr.allocated.get(r, 0) + amount <= attr.real_capability.get(r, float("inf"))
            for r, amount in vector.items()
            if amount > 0
        )


def _min(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    """``helpers.Min``: per resource of ``a``, the smaller amount (absent in ``b`` means zero)."""
    return {r: min(v, b.get(r, 0)) for r, v in a.items()}


def _max(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    out = dict(a)
    for r, v in b.items():
        out[r] = max(out.get(r, 0), v)
    return out


class _Allocator:
    def __init__(self, snapshot: Snapshot, policy: Policy, binpack: Binpack = DEFAULT_BINPACK) -> None:
        self.snapshot = snapshot
        self.policy = policy
        self.binpack = binpack
        self.state = ClusterState(snapshot)
        self.rng = random.Random(f"volcano:{policy.random_seed}:{snapshot.generation}")
        ready_nodes = [node for node in snapshot.nodes if node.ready]
        self.total: dict[str, float] = dict(fair_vector(res.total(node.allocatable for node in ready_nodes)))
        self.proportion = Proportion(snapshot, self.state, self.total)
        self.job_allocated: dict[str, dict[str, float]] = {}
        for pod in snapshot.pods:
            if pod.managed and pod.bound:
                _add(self.job_allocated.setdefault(gang_key(pod), {}), fair_vector(pod.requests))
        self.reasons: dict[str, Reason] = {}
        self.placed: dict[str, list[Pod]] = {}
        self.inqueue: set[str] = set()
        """PodGroups the enqueue action moved to Inqueue this cycle."""

    # --- orders ---------------------------------------------------------------------------------

    def _ready(self, job: Job) -> bool:
        return job.ready(self.placed.get(job.key, []))

    def _drf_share(self, job: Job) -> float:
        allocated = self.job_allocated.get(job.key, {})
        return max((_share(allocated.get(r, 0), t) for r, t in self.total.items() if t > 0), default=0.0)

    def job_order(self, job: Job) -> tuple[float, ...]:
        priority = -job.priority if self.policy.priority else 0
        gang = 1 if self.policy.gang and self._ready(job) else 0
        drf = self._drf_share(job) if self.policy.drf else 0.0
        return (priority, gang, drf, job.created)

    def queue_order(self, name: str) -> tuple[float, str]:
        attr = self.proportion.attrs.get(name)
        share = attr.share if attr is not None and self.policy.proportion else 0.0
        return (share, name)

    # --- enqueue --------------------------------------------------------------------------------

    def enqueue(self, jobs: list[Job]) -> list[Job]:
        """The jobs allowed into allocate: Inqueue already, or admitted now (the enqueue action)."""
        admitted: list[Job] = []
        waiting: dict[str, list[Job]] = {}
        inqueue_total: dict[str, float] = {}
        for job in jobs:
            group = job.group
            # A pod without a PodGroup gets a shadow one (minResources: its requests) that comes
            # through enqueue like any other; it is not persisted, so it does so every cycle.
            admitted_before = group is not None and (group.phase in ("Inqueue", "Running") or job.running > 0)
            if not self.policy.enqueue or admitted_before:
                admitted.append(job)
                if group is not None and group.phase == "Inqueue" and group.min_resources:
                    _add(inqueue_total, self._min_resources(job))
                    attr = self.proportion.attrs.get(job.queue)
                    if attr is not None:
                        _add(attr.inqueue, self._min_resources(job))
            else:
                waiting.setdefault(job.queue, []).append(job)
        used: dict[str, float] = {}
        for attr in self.proportion.attrs.values():
            _add(used, attr.allocated)
        idle = {
            r: v * self.policy.overcommit_factor - used.get(r, 0) - inqueue_total.get(r, 0)
            for r, v in self.total.items()
        }
        for name in waiting:
            waiting[name].sort(key=self.job_order)
        while waiting:
            name = min(waiting, key=self.queue_order)
            job = waiting[name].pop(0)
            if not waiting[name]:
                del waiting[name]
            minimum = self._min_resources(job)
            attr = self.proportion.attrs.get(job.queue)
            fits_cluster = not minimum or _le(minimum, idle)
            fits_queue = (
                attr is None
                or not minimum
                or _le_unbounded(
                    {r: minimum.get(r, 0) + attr.allocated.get(r, 0) + attr.inqueue.get(r, 0) for r in minimum},
                    attr.real_capability,
                )
            )
            if fits_cluster and fits_queue:
                admitted.append(job)
                self.inqueue.add(job.key)
                _add(idle, minimum, -1)
                if attr is not None:
                    _add(attr.inqueue, minimum)
            else:
                where = "the cluster's overcommitted idle room" if not fits_cluster else f"queue {job.queue}"
                self.reasons[job.key] = (
                    "InsufficientResources" if not fits_cluster else "QueueOverused",
                    f"not admitted by enqueue: minResources do not fit {where}",
                )
        return admitted

    def _min_resources(self, job: Job) -> dict[str, float]:
        if job.group is None:
            return dict(fair_vector(res.total(p.requests for p in job.pods)))
        return dict(fair_vector(job.group.min_resources))

    # --- allocate -------------------------------------------------------------------------------

    def allocate(self, jobs: list[Job]) -> None:
        by_queue: dict[str, list[Job]] = {}
        for job in jobs:
            by_queue.setdefault(job.queue, []).append(job)
        pending_pods = {job.key: list(job.pods) for job in jobs}
        while by_queue:
            name = min(by_queue, key=self.queue_order)
            attr = self.proportion.attrs.get(name)
            if self.policy.proportion and attr is not None and attr.overused():
                for job in by_queue.pop(name):
                    if job.key not in self.placed:
                        self.reasons.setdefault(
                            job.key, ("QueueOverused", f"queue {name} reached its deserved share this cycle")
                        )
                continue
            queue_jobs = by_queue[name]
            job = min(queue_jobs, key=lambda j: (self.job_order(j), j.key))
            queue_jobs.remove(job)
            if not queue_jobs:
                del by_queue[name]
            if self._allocate_job(job, pending_pods[job.key]) and pending_pods[job.key]:
                by_queue.setdefault(name, []).append(job)

    def _allocate_job(self, job: Job, tasks: list[Pod]) -> bool:
        """One turn of a job; True when it is ready with pods left (it goes back to its queue)."""
        statement = Statement(self.state)
        placed = self.placed.setdefault(job.key, [])
        before = len(placed)
        back = False
        while tasks:
            pod = tasks.pop(0)
            vector = fair_vector(pod.requests)
            if self.policy.proportion and not self.proportion.allocatable(job.queue, vector):
                self.reasons.setdefault(job.key, ("QueueOverused", f"queue {job.queue} has no room left"))
                continue
            if not self.state.queues.allows(job.queue, pod):
                self.reasons.setdefault(job.key, ("QueueOverused", f"queue {job.queue} capability is full"))
                continue
            eligible = self.state.eligible(pod)
            if not eligible:
                self.reasons[job.key] = ("Unschedulable", f"no node passes the predicates for {pod.key}")
                break
            need = self.state.demand(pod)
            candidates = [room for room in eligible if room.fits(pod, need)]
            if not candidates:
                break
            room = self._best_node(pod, candidates)
            statement.allocate(pod, room, lowest_free_gpus(room, pod))
            placed.append(pod)
            self._charge(job, pod, 1)
            if (not self.policy.gang or self._ready(job)) and tasks:
                back = True
                break
        if not self.policy.gang or self._ready(job):
            statement.commit()
            return back
        for pod in placed[before:]:
            self._charge(job, pod, -1)
        del placed[before:]
        statement.discard()
        self.reasons.setdefault(job.key, ("InsufficientResources", "the gang did not fit whole"))
        return False

    def _charge(self, job: Job, pod: Pod, sign: int) -> None:
        vector = fair_vector(pod.requests)
        attr = self.proportion.attrs.get(job.queue)
        if attr is not None:
            _add(attr.allocated, vector, sign)
        _add(self.job_allocated.setdefault(job.key, {}), vector, sign)

    def _best_node(self, pod: Pod, candidates: list[NodeRoom]) -> NodeRoom:
        if len(candidates) == 1:
            return candidates[0]
        taints = scoring.taint_toleration(
            [scoring.intolerable_prefer_no_schedule(room.node, pod) for room in candidates]
        )
        best: list[NodeRoom] = []
        best_score = float("-inf")
        for room, taint in zip(candidates, taints, strict=True):
            score = (
                scoring.least_allocated(room, pod)
                + scoring.balanced_allocation(room, pod)
                + TAINT_TOLERATION_WEIGHT * taint
                + self.binpack.weight * scoring.binpack(room, pod, dict(self.binpack.resources))
            )
            if score > best_score:
                best, best_score = [room], score
            elif score == best_score:
                best.append(room)
        return best[0] if len(best) == 1 else self.rng.choice(best)


def solve(snapshot: Snapshot, policy: Policy | None = None) -> Decision:
    """One cycle of Volcano's enqueue and allocate actions (see the module docstring)."""
    return _solve(snapshot, policy or Policy(), DEFAULT_BINPACK, NAME)


def solve_gpu(snapshot: Snapshot, policy: Policy | None = None) -> Decision:
    """The same cycle with binpack configured for GPUs (:data:`GPU_BINPACK`)."""
    return _solve(snapshot, policy or Policy(), GPU_BINPACK, GPU_NAME)


def _solve(snapshot: Snapshot, policy: Policy, binpack: Binpack, name: str) -> Decision:
    started = time.monotonic()
    allocator = _Allocator(snapshot, policy, binpack)
    jobs = pending_jobs(snapshot, gang=policy.gang)
    valid: list[Job] = []
    for job in jobs:
        if job.invalid == "unknown":
            allocator.reasons[job.key] = ("Unschedulable", f"PodGroup {job.key} is not in the snapshot")
        elif job.invalid:
            allocator.reasons[job.key] = ("GangUnsatisfied", job.invalid)
        elif not allocator.state.queues.is_open(job.queue):
            allocator.reasons[job.key] = ("QueueClosed", f"queue {job.queue} is closed or unknown")
        else:
            valid.append(job)
    allocator.allocate(allocator.enqueue(valid))
    return decision(
        snapshot,
        allocator.state.placements,
        allocator.reasons,
        scheduler=name,
        started=started,
        inqueue=allocator.inqueue,
    )
