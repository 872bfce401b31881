"""Fragmentation Gradient Descent (FGD) as a baseline: place each pod where the cluster's expected GPU
fragmentation grows least.

Source: Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
Gradient Descent", USENIX ATC'23, and its simulator (hkust-adsl/kubernetes-scheduler-simulator,
``pkg/utils/frag.go`` and ``pkg/simulator/plugin/fgd_score.go``; read, not copied).

- **The workload** is a distribution over task types (cpu, GPUs per task, thousandths per GPU, and
  where the task may run): the most popular types covering 95% of the tasks, renormalised (the
  paper's experiments: ``podPopularityThreshold: 95``, CPU-only tasks included).
- **A node's fragmentation for one task type** is the GPU room (thousandths) that task cannot use:
  all of the node's unallocated GPU room when the task asks no GPU, may not run there (GPU type), or
  lacks cpu or enough GPUs with room; otherwise the room of the GPUs too small for one of its
  GPU requests. **A node's expected fragmentation** weighs that by the types' popularity.
- **Placement**: among the nodes where the pod passes the predicates and fits, the one whose
  expected fragmentation increases least; a GPU share goes to the GPU (tried each in turn) that
  increases it least, whole GPUs to the lowest free indices (the simulator's exclusive allocation).

Where this differs, and why: the simulator maps the decrease through a sigmoid to an integer score
and breaks the resulting ties at random; here the exact increase decides and ties go to the node
listed first (and the lowest GPU index), so runs repeat. Jobs go in priority-then-age order and gangs
are all or nothing (:mod:`vcsat.solver.baselines.placer`), as for best fit and first fit.

Use :class:`FGD` with the workload's distribution when it is known up front (the paper gives FGD the
trace's); :func:`solve` estimates it from the snapshot's own pods (running and pending).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from vcsat.model import Decision, Node, Pod, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.solver.baselines.placer import Choice, place_jobs
from vcsat.solver.baselines.state import FULL_GPU_MILLI, ClusterState, NodeRoom, lowest_free_gpus
from vcsat.solver.predicates import EligibilityKey, NodeIndex, eligibility_key

NAME = "fgd"
POPULARITY = 0.95
"""Share of tasks the typical task types must cover (the paper's experiments use 95%)."""


@dataclass(frozen=True)
class TaskType:
    """What fragmentation depends on about a task."""

    cpu_milli: int
    gpu_milli: int
    """Thousandths asked of each GPU: 1000 for whole GPUs, the share for a GPU share, 0 for none."""
    gpu_count: int
    """GPU devices it needs: its whole GPUs, 1 for a share, 0 for none."""
    eligibility: EligibilityKey


Distribution = tuple[tuple[TaskType, float], ...]
"""Task types with their popularity (summing to 1), most popular first."""


def task_type(pod: Pod) -> TaskType:
    if pod.gpus > 0:
        milli, count = FULL_GPU_MILLI, pod.gpus
    elif pod.gpu_milli > 0:
        milli, count = pod.gpu_milli, 1
    else:
        milli, count = 0, 0
    return TaskType(pod.requests.get(res.CPU, 0), milli, count, eligibility_key(pod))


def typical_tasks(pods: Iterable[Pod], popularity: float = POPULARITY) -> Distribution:
    """The most popular task types covering ``popularity`` of the pods, renormalised."""
    counts = Counter(task_type(pod) for pod in pods)
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


class Fragmentation:
    """Expected fragmentation of a node state for one distribution, memoised across cycles."""

    def __init__(self, distribution: Distribution) -> None:
        self.distribution = distribution
        self._memo: dict[tuple[int, int, tuple[int, ...]], float] = {}
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

    def of(self, access: int, cpu_left: int, lefts: tuple[int, ...]) -> float:
        """Expected fragmentation (thousandths of a GPU) of a node; ``lefts`` sorted, largest first."""
        key = (access, cpu_left, lefts)
        value = self._memo.get(key)
        if value is None:
            value = self._memo[key] = self._compute(access, cpu_left, lefts)
        return value

    def _compute(self, access: int, cpu_left: int, lefts: tuple[int, ...]) -> float:
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
            if gpus_fit and cpu_left >= task.cpu_milli:
                expected += weight * sum(left for left in lefts if left < task.gpu_milli)
            else:
                expected += weight * total_left
        return expected


class FGD:
    """The FGD placement policy for one workload distribution (a solve function)."""

    def __init__(self, distribution: Distribution) -> None:
        self.fragmentation = Fragmentation(distribution)

    def __call__(self, snapshot: Snapshot, policy: Policy | None = None) -> Decision:
        return place_jobs(snapshot, policy or Policy(), self._choose, name=NAME)

    def _choose(self, state: ClusterState, pod: Pod, rooms: list[NodeRoom]) -> Choice:
        access = self.fragmentation.access(state.snapshot.nodes, state.index)
        frag = self.fragmentation.of
        cpu = pod.requests.get(res.CPU, 0)
        best: tuple[float, int, int] | None = None
        best_choice: Choice | None = None
        for room in rooms:
            lefts = room.gpu_lefts()
            cpu_left = room.free.get(res.CPU, 0)
            before = frag(access[room.index], cpu_left, tuple(sorted(lefts, reverse=True)))
            if pod.gpus == 0 and pod.gpu_milli > 0:
                for gpu in room.share_room(pod.gpu_milli):
                    after_lefts = list(lefts)
                    after_lefts[gpu] -= pod.gpu_milli
                    after = frag(access[room.index], cpu_left - cpu, tuple(sorted(after_lefts, reverse=True)))
                    rank = (after - before, room.index, gpu)
                    if best is None or rank < best:
                        best, best_choice = rank, (room, (gpu,))
                continue
            gpus = lowest_free_gpus(room, pod)
            after_lefts = list(lefts)
            for gpu in gpus:
                after_lefts[gpu] = 0
            after = frag(access[room.index], cpu_left - cpu, tuple(sorted(after_lefts, reverse=True)))
            rank = (after - before, room.index, 0)
            if best is None or rank < best:
                best, best_choice = rank, (room, gpus)
        assert best_choice is not None  # rooms is never empty
        return best_choice


def solve(snapshot: Snapshot, policy: Policy | None = None) -> Decision:
    """FGD with the workload estimated from the snapshot's own managed pods, running and pending."""
    pods = [pod for pod in snapshot.pods if pod.managed and (pod.bound or pod.pending)]
    return FGD(typical_tasks(pods))(snapshot, policy)
