"""Expected GPU fragmentation of a node for the workload to come: the measure of FGD, for vcsat's own
decisions and for the FGD baseline alike.

Why it exists: where GPU shares, small GPU pods and CPU-only pods land decides how much of the room
left can still take the jobs that come next (Weng et al., "Beware of Fragmentation: Scheduling
GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23). Best fit does not see
it: a share that best fit puts on the tightest GPU may leave a sliver no common share fits, and a
CPU-only pod on a GPU node strands the node's GPUs once its cpu runs out. FGD measures this against
the workload's own mix of tasks.

How vcsat uses it, on workloads that share GPUs (:func:`for_problem`; elsewhere best fit and the
packing levels stand): the exact search decides *what* runs (the most work, fairly; the share-room
cuts of :mod:`vcsat.solver.constraints.share_room` keep its count of shares honest); *where* is
decided with this measure itself, which is not linear in the model's counts: one pod at a time,
each on the node whose expected fragmentation grows least (:func:`greedy_chooser` for the greedy
warm start and fallback, :func:`fragmentation_layout` for the search's decision), and each share on
the GPU that grows it least (:func:`share_gpus`, through :func:`vcsat.solver.placement.gpu_choice.plan_node`).
The measure is not a CP-SAT objective (a per-(bucket, node) table of it): such a table sees neither
the cpu that differs between a bucket's pods nor two buckets meeting on one node, and it strands
more GPUs than the greedy it starts from (benchmarks/RESULTS.md, design measurements).

- **The workload** is a distribution over task types (cpu, GPUs per task, thousandths per GPU,
  where the task may run, and in vcsat's own, memory): the most popular types covering 95% of the
  tasks, renormalised (the paper's ``podPopularityThreshold: 95``, CPU-only tasks included). The
  FGD baseline may be given it up front, as the paper gives it the trace's; vcsat estimates it
  from what it was asked to run, the snapshot's own pods, bound and pending (:func:`workload_of`),
  which any live scheduler knows, and weighs each type by the GPUs it asks rather than by its count.
- **A node's fragmentation for one task type** is the GPU room (thousandths) that task cannot use:
  all of the node's unallocated GPU room when the task asks no GPU, may not run there, or lacks
  cpu or enough GPUs with room; otherwise the room of the GPUs too small for one of its GPU
  requests. **A node's expected fragmentation** weighs that by the types' popularity.
- **Memory strands GPUs too** (vcsat's measure; the FGD baseline keeps the paper's, cpu only): in
  vcsat's distribution a task type includes the memory it asks, and a node without that much
  memory left cannot use any of its GPU room for it, exactly as with cpu. A GPU node whose memory
  is gone holds idle GPUs however many cores it has left, and a measure blind to memory packs
  memory-heavy pods onto the same nodes as readily as light ones. Alibaba's openb trace is such a
  workload: many of its 1-GPU pods ask more memory than its 8-GPU nodes have per GPU, and with a
  cpu-only measure the pods turned away after saturation were short of memory on nodes that still
  had GPU room and cores (benchmarks/RESULTS.md, design measurements).

Source of the measure: the paper and its simulator (hkust-adsl/kubernetes-scheduler-simulator,
``pkg/utils/frag.go``; read, not copied). Deterministic; the one state kept is the last problem's
measure (:func:`for_problem`), so the greedy, the search and the decode of a cycle share it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from vcsat.model import Node, Pod, Snapshot
from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.solver.pricing import scarcity
from vcsat.solver.pricing.pod_tally import Tally
from vcsat.solver.pricing.spec_memo import SpecMemo
from vcsat.solver.rules.predicates import EligibilityKey, NodeIndex, eligibility_key

if TYPE_CHECKING:
    from vcsat.solver.assignment import Assignment
    from vcsat.solver.greedy import Room
    from vcsat.solver.problem import Problem, Shape

POPULARITY = 0.95
"""Share of tasks the typical task types must cover (the paper's experiments use 95%)."""
GPU_DEMAND_COVERED = 0.99
"""vcsat's own distribution: the types covering this share of the GPU demand (the long tail of
one-off types would only slow the measure down)."""


@dataclass(frozen=True)
class TaskType:
    """What fragmentation depends on about a task."""

    cpu_milli: int
    gpu_milli: int
    """Thousandths asked of each GPU: 1000 for whole GPUs, the share for a GPU share, 0 for none."""
    gpu_count: int
    """GPU devices it needs: its whole GPUs, 1 for a share, 0 for none."""
    eligibility: EligibilityKey
    memory: int = 0
    """Memory it asks, in bytes; 0 where memory is not counted (FGD's own measure, as its paper's, counts cpu
    only: :func:`task_type` with ``memory=False``)."""


Distribution = tuple[tuple[TaskType, float], ...]
"""Task types with their popularity (summing to 1), most popular first."""


def task_type(pod: Pod, *, memory: bool = False) -> TaskType:
    """What fragmentation depends on about ``pod``; its memory too when ``memory`` (vcsat's measure)."""
    if pod.gpus > 0:
        milli, count = FULL_GPU_MILLI, pod.gpus
    elif pod.gpu_milli > 0:
        milli, count = pod.gpu_milli, 1
    else:
        milli, count = 0, 0
    asked = pod.requests.get(res.MEMORY, 0) if memory else 0
    return TaskType(pod.requests.get(res.CPU, 0), milli, count, eligibility_key(pod), asked)


def typical_tasks(pods: Iterable[Pod], popularity: float = POPULARITY) -> Distribution:
    """The most popular task types covering ``popularity`` of the pods, renormalised."""
    return typical_of_counts(Counter(task_type(pod) for pod in pods), popularity)


def typical_of_counts(counts: Counter[TaskType], popularity: float = POPULARITY) -> Distribution:
    """The most popular types (by ``counts``, which may be weights) covering ``popularity`` of the
    total, renormalised."""
    total = sum(counts.values())
    if total == 0:
        return ()
    # Most popular first; equal counts in a fixed order, so the distribution never depends on hashing.
    ranked = sorted(
        counts.items(),
        key=lambda item: (
            -item[1],
            item[0].gpu_milli,
            item[0].gpu_count,
            item[0].cpu_milli,
            item[0].memory,
            repr(item[0].eligibility),
        ),
    )
    kept: list[tuple[TaskType, int]] = []
    covered = 0
    for task, count in ranked:
        if covered >= popularity * total:
            break
        kept.append((task, count))
        covered += count
    return tuple((task, count / covered) for task, count in kept)


def _task_of(pod: Pod) -> tuple[tuple[TaskType, int], ...]:
    """One task of its type, for vcsat's own pods bound or pending (none for the others)."""
    if not pod.managed or not (pod.bound or pod.pending):
        return ()
    # A task type reads only the pod's spec: one contribution per spec, its type hashed once
    # rather than once a pod.
    return _TASK_BY_SPEC.made(pod)


def _one_task(pod: Pod) -> tuple[tuple[TaskType, int], ...]:
    """The pod's task type, counted once."""
    return ((task_type(pod, memory=True), 1),)


_TASK_BY_SPEC: SpecMemo[tuple[tuple[TaskType, int], ...]] = SpecMemo(_one_task)
"""What a pod adds to the task tally, by its spec."""


_TASKS: Tally[TaskType] = Tally(_task_of)
"""The workload's tasks per type, kept from the last call (:mod:`vcsat.solver.pricing.pod_tally`)."""


def workload_of(snapshot: Snapshot) -> Distribution:
    """The task distribution vcsat plans for: its own pods in the snapshot, bound and pending, by
    the GPU demand of each type (the types covering :data:`GPU_DEMAND_COVERED` of it)."""
    counts = Counter(_TASKS.of_snapshot(snapshot))
    # Weighed by the GPU thousandths each type asks, not by how many tasks: the room a placement
    # strands is counted in GPUs, so a rare 8-GPU task weighs as much as eight 1-GPU ones (counted
    # by tasks, the 95% cut drops 8-GPU tasks from Alibaba's trace and nothing keeps whole nodes for
    # them). Tasks asking no GPU are left out: wherever they go they count the same room as lost.
    demand = Counter({task: n * task.gpu_milli * task.gpu_count for task, n in counts.items() if task.gpu_milli})
    return typical_of_counts(demand, GPU_DEMAND_COVERED)


def gpu_share_workload(distribution: Distribution) -> bool:
    """Whether fragmentation is worth measuring: some typical task shares a GPU (the FGD setting).

    Without shares every GPU is free or taken whole and best fit already keeps whole nodes free;
    the measure would only slow the search."""
    return any(0 < task.gpu_milli < FULL_GPU_MILLI for task, _ in distribution)


class Fragmentation:
    """Expected fragmentation of a node state for one distribution, memoised across calls."""

    def __init__(self, distribution: Distribution) -> None:
        self.distribution = distribution
        self._memo: dict[tuple[int, int, int | None, tuple[int, ...]], float] = {}
        self._signatures: dict[tuple[bool, ...], int] = {}
        self._by_id: list[tuple[bool, ...]] = []
        self._access_of: tuple[tuple[int, ...], list[int]] | None = None

    def access(self, nodes: tuple[Node, ...], index: NodeIndex) -> list[int]:
        """Per node, an id of the set of task types that may run there (predicates only)."""
        ids = tuple(map(id, nodes))
        if self._access_of is not None and self._access_of[0] == ids:
            return self._access_of[1]
        masks = [index.mask(task.eligibility) for task, _ in self.distribution]
        out: list[int] = []
        for i in range(len(nodes)):
            bit = 1 << i
            signature = tuple(bool(mask & bit) for mask in masks)
            number = self._signatures.get(signature)
            if number is None:
                number = self._signatures[signature] = len(self._by_id)
                self._by_id.append(signature)
            out.append(number)
        self._access_of = (ids, out)
        return out

    def of(self, access: int, cpu_left: int, lefts: Sequence[int], memory_left: int | None = None) -> float:
        """Expected fragmentation (thousandths of a GPU) of a node: ``lefts`` is each GPU's room;
        ``memory_left`` the node's free memory (None: memory not counted)."""
        ordered = tuple(sorted(lefts, reverse=True))
        key = (access, cpu_left, memory_left, ordered)
        value = self._memo.get(key)
        if value is None:
            value = self._memo[key] = self._compute(access, cpu_left, memory_left, ordered)
        return value

    def _compute(self, access: int, cpu_left: int, memory_left: int | None, lefts: tuple[int, ...]) -> float:
        total_left = sum(lefts)
        if total_left == 0:
            return 0.0
        signature = self._by_id[access]
        expected = 0.0
        for (task, weight), allowed in zip(self.distribution, signature, strict=True):
            if task.gpu_milli == 0 or not allowed:
                expected += weight * total_left
                continue
            # lefts is sorted largest first: the task fits its GPUs iff the gpu_count-th largest does.
            gpus_fit = len(lefts) >= task.gpu_count and lefts[task.gpu_count - 1] >= task.gpu_milli
            memory_fits = memory_left is None or memory_left >= task.memory
            if gpus_fit and cpu_left >= task.cpu_milli and memory_fits:
                expected += weight * sum(left for left in lefts if left < task.gpu_milli)
            else:
                expected += weight * total_left
        return expected


def share_gpus(
    score: Callable[[Sequence[int]], float],
    requests: Sequence[int],
    lefts: Sequence[int],
    candidates: Sequence[int],
) -> list[int | None]:
    """Per share request (thousandths), the GPU that takes it, FGD's way: biggest share first, each
    on the GPU (among ``candidates``, in preference order on ties) after which ``score`` of the
    node's per-GPU room is least. ``lefts``: room per GPU index (0 for GPUs not to be used).
    None where no candidate has room."""
    room = list(lefts)
    out: list[int | None] = [None] * len(requests)
    for position in sorted(range(len(requests)), key=lambda i: (-requests[i], i)):
        milli = requests[position]
        best: tuple[float, int] | None = None
        for rank, gpu in enumerate(candidates):
            if room[gpu] < milli:
                continue
            room[gpu] -= milli
            after = score(room)
            room[gpu] += milli
            if best is None or (after, rank) < best:
                best = (after, rank)
        if best is None:
            continue
        gpu = candidates[best[1]]
        room[gpu] -= milli
        out[position] = gpu
    return out


class NodeScore:
    """A node's expected fragmentation as a function of its per-GPU room alone (cpu and memory fixed)."""

    def __init__(
        self, fragmentation: Fragmentation, access: int, cpu_left: int, memory_left: int | None = None
    ) -> None:
        self.fragmentation = fragmentation
        self.access = access
        self.cpu_left = cpu_left
        self.memory_left = memory_left

    def __call__(self, lefts: Sequence[int]) -> float:
        return self.fragmentation.of(self.access, self.cpu_left, lefts, self.memory_left)


class ProblemFragmentation:
    """The measure for one cycle's :class:`~vcsat.solver.problem.Problem`: per node, the GPUs' room
    and the cpu left now, and scores of states after new placements."""

    def __init__(self, problem: Problem, distribution: Distribution) -> None:
        self.problem = problem
        self.fragmentation = Fragmentation(distribution)
        index = problem.node_index or NodeIndex(problem.nodes)
        self.access = self.fragmentation.access(problem.nodes, index)
        self.cpu = problem.resources.index(res.CPU) if res.CPU in problem.resources else None
        self.memory = problem.resources.index(res.MEMORY) if res.MEMORY in problem.resources else None

    def lefts(self, node: int) -> list[int]:
        """Per GPU index of the node: thousandths nobody holds now (0 for a GPU held whole)."""
        problem = self.problem
        out = [0] * problem.nodes[node].gpus
        for gpu in problem.free_gpu_ids[node]:
            out[gpu] = FULL_GPU_MILLI
        for gpu, used in problem.shared_milli[node].items():
            if 0 <= gpu < len(out):
                out[gpu] = FULL_GPU_MILLI - used
        return out

    def cpu_left(self, node: int) -> int:
        """Millicores free on the node now (its allocatable when no pending pod asks cpu)."""
        if self.cpu is not None:
            return self.problem.free[node][self.cpu]
        return self.problem.nodes[node].allocatable.get(res.CPU, 0)

    def memory_left(self, node: int) -> int | None:
        """Bytes of memory free on the node now; None when no pending pod asks memory (nothing to strand)."""
        return self.problem.free[node][self.memory] if self.memory is not None else None

    def score(self, node: int, cpu_taken: int = 0, memory_taken: int = 0) -> NodeScore:
        """The node's expected fragmentation as a function of its GPUs' room, after ``cpu_taken``
        more millicores and ``memory_taken`` more bytes of memory are placed there."""
        memory = self.memory_left(node)
        return NodeScore(
            self.fragmentation,
            self.access[node],
            self.cpu_left(node) - cpu_taken,
            None if memory is None else memory - memory_taken,
        )


_last: tuple[Problem, ProblemFragmentation | None] | None = None

MAX_EVALUATIONS = 1_000_000
"""Placing pod by pod, each against every node it may go to, costs pods × nodes evaluations of the
measure (a few microseconds each once memoised; Alibaba's trace asks under 10,000 a cycle on its
1,213 nodes). Beyond this many, a cycle keeps best fit rather than overrun its time."""


def _evaluations(problem: Problem) -> int:
    return sum(
        len(problem.classes[c].pods) * len(problem.shapes[problem.classes[c].shape].nodes)
        for gang in problem.candidates
        for c in gang.classes
    )


def for_problem(problem: Problem) -> ProblemFragmentation | None:
    """The measure for this cycle's problem, or None when its workload shares no GPU or the cycle is
    too big to place pod by pod (:data:`MAX_EVALUATIONS`; then best fit stands). Computed once per
    problem: the greedy, the model and the decode all read it."""
    global _last
    if _last is not None and _last[0] is problem:
        return _last[1]
    measure: ProblemFragmentation | None = None
    if any(node.gpus for node in problem.nodes) and _evaluations(problem) <= MAX_EVALUATIONS:
        distribution = workload_of(problem.snapshot)
        if gpu_share_workload(distribution):
            measure = ProblemFragmentation(problem, distribution)
    _last = (problem, measure)
    return measure


def gpu_lefts(whole: int, shared: Iterable[int]) -> list[int]:
    """Per GPU with room, its thousandths free: ``whole`` untouched GPUs and GPUs whose shares hold
    ``shared`` thousandths each, largest room first (GPUs without room change no fragmentation and
    are left out)."""
    rooms = sorted((FULL_GPU_MILLI - used for used in shared if used < FULL_GPU_MILLI), reverse=True)
    return [FULL_GPU_MILLI] * max(0, whole) + rooms


def placement_delta(
    score: NodeScore, lefts: Sequence[int], cpu_before: NodeScore, gpus: int, share: int
) -> float | None:
    """How much one pod grows a node's expected fragmentation: ``gpus`` whole GPUs or a share of
    ``share`` thousandths (on the GPU FGD picks), or neither; ``score`` is the node after the pod's
    cpu, ``cpu_before`` before it. None when the GPUs do not fit."""
    before = cpu_before(lefts)
    if share > 0:
        best: float | None = None
        room = list(lefts)
        for i, left in enumerate(lefts):
            if left < share or (i > 0 and lefts[i - 1] == left):
                continue  # equal rooms give equal states: try each room once
            room[i] = left - share
            after = score(room)
            room[i] = left
            best = after if best is None else min(best, after)
        return None if best is None else best - before
    if gpus > 0:
        ordered = sorted(lefts, reverse=True)
        if len(ordered) < gpus or ordered[gpus - 1] < FULL_GPU_MILLI:
            return None
        return score(ordered[gpus:]) - before
    return score(lefts) - before


GreedyChoice = Callable[["Room", "Shape"], "int | None"]


def greedy_chooser(problem: Problem) -> GreedyChoice | None:
    """For the greedy (warm start and fallback): the node a pod of a shape goes to, the one whose
    expected fragmentation grows least (fewest free GPUs, then node order, on ties); None when the
    workload shares no GPU, and best fit stands."""
    if problem.isolated:
        return None  # rules between pods decide nodes pod by pod: best fit, checked per pod
    measure = for_problem(problem)
    return None if measure is None else partial(_least_fragmenting, measure)


def _least_fragmenting(measure: ProblemFragmentation, room: Room, shape: Shape) -> int | None:
    problem = measure.problem
    request = shape.request
    milli = problem.resources.index(res.GPU_MILLI) if res.GPU_MILLI in problem.resources else None
    share = request[milli] - FULL_GPU_MILLI * shape.gpus if milli is not None else 0
    cpu = request[measure.cpu] if measure.cpu is not None else 0
    memory = request[measure.memory] if measure.memory is not None else 0
    fragmentation = measure.fragmentation
    scarce = scarcity.for_problem(problem)
    best: tuple[float, float, int, int] | None = None
    for node in shape.nodes:
        if not room.fits(node, request):
            continue
        cpu_now = room.free[node][measure.cpu] if measure.cpu is not None else measure.cpu_left(node)
        access = measure.access[node]
        memory_now = room.free[node][measure.memory] if measure.memory is not None else None
        memory_after = None if memory_now is None else memory_now - memory
        delta = placement_delta(
            NodeScore(fragmentation, access, cpu_now - cpu, memory_after),
            gpu_lefts(room.whole[node], room.shared[node].values()),
            NodeScore(fragmentation, access, cpu_now, memory_now),
            shape.gpus,
            share,
        )
        if delta is None:
            continue
        cost = 0.0
        if scarce is not None:  # scarce GPU pools first (vcsat.solver.pricing.scarcity), then fragmentation
            free_gpu = scarcity.free_room(room.whole[node], room.shared[node].values())
            cost = scarcity.price(
                scarce,
                node,
                shape.eligibility,
                shape.gpus * FULL_GPU_MILLI + share,
                free_gpu,
                (cpu, cpu_now),
                (memory, memory_now or 0),
            )
        key = (round(cost), round(delta, 6), room.whole[node], node)
        if best is None or key < best:
            best = key
    return None if best is None else best[3]


def node_score(problem: Problem, node: int, pods: Iterable[Pod]) -> NodeScore | None:
    """For the decode: the node's expected fragmentation once ``pods`` land there, as a function of
    its GPUs' room (so that each share takes the GPU that grows it least); None when the workload
    shares no GPU."""
    measure = for_problem(problem)
    if measure is None:
        return None
    pods = list(pods)
    return measure.score(
        node,
        cpu_taken=sum(pod.requests.get(res.CPU, 0) for pod in pods),
        memory_taken=sum(pod.requests.get(res.MEMORY, 0) for pod in pods),
    )


def fragmentation_layout(problem: Problem, assignment: Assignment) -> dict[tuple[int, int], int] | None:
    """For the decode: the nodes of every pod the model decided to place, chosen as the greedy
    chooses them (:func:`greedy_chooser`: one pod at a time, each where the node's expected
    fragmentation grows least, with its real request and the node's exact GPU state), gangs in the
    greedy's order (priority, then age; biggest first strands more GPUs on openb, see
    benchmarks/RESULTS.md). Per (shape, node), the pods placed there.

    The model decides *what* runs (the most work, fairly); FGD's measure is not linear in its
    counts, so *where* is decided here with the measure itself. None when the workload shares no
    GPU, when the model placed topology-priced gangs (their domains are the model's), or when a pod
    finds no node this way (the model's own layout stands then)."""
    from vcsat.solver.greedy import Room, gang_order  # the greedy imports this module

    measure = for_problem(problem)
    if problem.isolated or problem.attach is not None:
        return None  # isolated classes' (shared volumes') nodes are the model's: its rules hold there
    if measure is None or assignment.shape_slots or assignment.domain_counts or not assignment.count:
        return None
    if any(g in assignment.placed for g in problem.topology_gangs):
        return None
    room = Room(problem)
    layout: dict[tuple[int, int], int] = {}
    for gang in sorted((problem.gangs[g] for g in assignment.placed), key=gang_order):
        classes = sorted(
            (problem.classes[c] for c in gang.classes if assignment.count.get(c, 0) > 0),
            key=lambda pc: (-problem.shapes[pc.shape].gpus, pc.index),
        )
        for pod_class in classes:
            shape = problem.shapes[pod_class.shape]
            for _ in range(assignment.count[pod_class.index]):
                node = _least_fragmenting(measure, room, shape)
                if node is None:
                    return None
                room.take(node, shape.request)
                layout[(shape.index, node)] = layout.get((shape.index, node), 0) + 1
    return layout
