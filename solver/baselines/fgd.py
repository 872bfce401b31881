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

from vcsat.model import Decision, Pod, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.solver.baselines.placer import Choice, place_jobs
from vcsat.solver.baselines.state import ClusterState, NodeRoom, lowest_free_gpus
from vcsat.solver.pricing.fragmentation import Distribution, Fragmentation, TaskType, task_type, typical_tasks

NAME = "fgd"

__all__ = ["FGD", "NAME", "Distribution", "Fragmentation", "TaskType", "solve", "task_type", "typical_tasks"]


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
