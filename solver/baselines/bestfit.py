"""Best fit as a baseline: each pod to the node it leaves with the least room (cpu and GPU).

Source (read, not copied): the best-fit policy of the FGD paper's simulator
(hkust-adsl/kubernetes-scheduler-simulator, ``pkg/simulator/plugin/best_fit_score.go``): a node's
score is ``Σ_r w_r (free_r − request_r) / maxSpec_r`` over cpu and GPU with ``w = 0.5`` each,
``maxSpec`` the largest node's amount, GPUs counted in thousandths summed over the node's devices;
the lowest score wins. Memory is not scored (it is still checked: the pod must fit). The simulator
truncates scores to integers and breaks ties at random; here the exact score decides and ties go to
the node listed first, so runs repeat. A GPU share goes to the fullest GPU that still has room for
it (best fit over devices), whole GPUs to the lowest free indices.

Jobs go in priority-then-age order and gangs are all or nothing (:mod:`vcsat.solver.baselines.placer`).
"""

from __future__ import annotations

from vcsat.model import Decision, Pod, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.solver.baselines.placer import Choice, place_jobs
from vcsat.solver.baselines.state import FULL_GPU_MILLI, ClusterState, NodeRoom, fullest_gpu_share

NAME = "bestfit"
CPU_WEIGHT = 0.5
GPU_WEIGHT = 0.5


def gpu_milli_request(pod: Pod) -> int:
    """The pod's GPUs in thousandths: whole GPUs × 1000, or its share."""
    return pod.gpus * FULL_GPU_MILLI if pod.gpus else pod.gpu_milli


def leftover(room: NodeRoom, pod: Pod, max_cpu: int, max_gpu_milli: int) -> float:
    cpu_left = room.free.get(res.CPU, 0) - pod.requests.get(res.CPU, 0)
    gpu_left = sum(room.gpu_lefts()) - gpu_milli_request(pod)
    score = CPU_WEIGHT * cpu_left / max_cpu if max_cpu else 0.0
    if max_gpu_milli:
        score += GPU_WEIGHT * gpu_left / max_gpu_milli
    return score


def choose(state: ClusterState, pod: Pod, rooms: list[NodeRoom]) -> Choice:
    max_cpu = state.largest(res.CPU)
    max_gpu = state.largest(res.GPU) * FULL_GPU_MILLI
    room = min(rooms, key=lambda r: (leftover(r, pod, max_cpu, max_gpu), r.index))
    return room, fullest_gpu_share(room, pod)


def solve(snapshot: Snapshot, policy: Policy | None = None) -> Decision:
    return place_jobs(snapshot, policy or Policy(), choose, name=NAME)
