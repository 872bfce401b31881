"""First fit as a baseline: each pod to the first node, in the snapshot's node order, where it fits.

Source (read, not copied): the first-fit policy of the FGD paper's simulator
(hkust-adsl/kubernetes-scheduler-simulator, ``pkg/simulator/plugin/first_fit_score.go``: every node
scores the same, so the node list order decides). Whole GPUs take the lowest free indices, a GPU
share the lowest GPU with room (first fit over devices too).

Jobs go in priority-then-age order and gangs are all or nothing (:mod:`vcsat.solver.baselines.placer`).
"""

from __future__ import annotations

from vcsat.model import Decision, Pod, Policy, Snapshot
from vcsat.solver.baselines.placer import Choice, place_jobs
from vcsat.solver.baselines.state import ClusterState, NodeRoom, lowest_free_gpus

NAME = "firstfit"


def choose(state: ClusterState, pod: Pod, rooms: list[NodeRoom]) -> Choice:
    room = rooms[0]
    return room, lowest_free_gpus(room, pod)


def solve(snapshot: Snapshot, policy: Policy | None = None) -> Decision:
    return place_jobs(snapshot, policy or Policy(), choose, name=NAME)
