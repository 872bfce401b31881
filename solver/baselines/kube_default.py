"""The default Kubernetes scheduler as a baseline: one pod at a time, no gangs, spread by score.

Source (read, not copied): kubernetes ``pkg/scheduler`` (``schedule_one.go``: ``findNodesThatFitPod``,
``numFeasibleNodesToFind``, ``prioritizeNodes``, ``selectHost``; ``internal/queue``'s PrioritySort)
and the default profile's scoring plugins.

- **Queue order** (PrioritySort): higher pod priority first, then the older pod. PodGroups mean
  nothing to it: every pod is placed on its own, so a gang may end up partly placed, its pods
  holding room while they wait for members that do not fit (the deadlock gang scheduling prevents).
- **Filter**: the predicates (:mod:`vcsat.solver.rules.predicates`) and NodeResourcesFit. Like the real
  scheduler it stops searching once it has found ``numFeasibleNodesToFind`` feasible nodes (all
  nodes below 100; else ``max(100, n × max(5, 50 − n/125) %)``), starting where the previous pod's
  search stopped (the real scheduler carries that index across cycles; here each cycle starts at 0).
- **Score**: NodeResourcesFit LeastAllocated × 1 + NodeResourcesBalancedAllocation × 1 +
  TaintToleration × 3 + NodeAffinity's preferred terms × 2, over cpu and memory (the default
  resources; GPUs are not scored). The other default score plugins (InterPodAffinity,
  PodTopologySpread, ImageLocality) give every node the same score for these pods and are left out.
  The filter includes NodeVolumeLimits (distinct CSI volumes per driver within the CSINode's limit).
- **Select**: the highest score; ties broken at random (``selectHost``), here by a generator seeded
  with the policy's ``random_seed`` and the snapshot generation, so runs repeat.

Beyond the real scheduler, and stated: queue capability and Closed queues are kept (contract §3 is a
hard rule for every decision here); GPU indices are the lowest free ones (the device plugin's job),
a GPU share goes to the first GPU with room. The decision keeps no gangs, so check it with
``policy.gang`` off.
"""

from __future__ import annotations

import bisect
import random
import time

from vcsat.model import Decision, Pod, Policy, Snapshot
from vcsat.solver.baselines import scoring
from vcsat.solver.baselines.jobs import pending_jobs, task_order
from vcsat.solver.baselines.outcome import Reason, decision
from vcsat.solver.baselines.state import ClusterState, NodeRoom, lowest_free_gpus

NAME = "kube-default"
GANG = False
"""Its decisions keep no gangs: validate them with ``Policy(gang=False)``."""
TAINT_TOLERATION_WEIGHT = 3
NODE_AFFINITY_WEIGHT = 2
MIN_FEASIBLE_NODES = 100
MIN_FEASIBLE_PERCENT = 5
BASE_PERCENT = 50


def feasible_nodes_to_find(all_nodes: int) -> int:
    """kube-scheduler's ``numFeasibleNodesToFind`` with the adaptive default percentage."""
    if all_nodes < MIN_FEASIBLE_NODES:
        return all_nodes
    percent = max(MIN_FEASIBLE_PERCENT, BASE_PERCENT - all_nodes // 125)
    return max(MIN_FEASIBLE_NODES, all_nodes * percent // 100)


class _Scheduler:
    def __init__(self, snapshot: Snapshot, policy: Policy) -> None:
        self.state = ClusterState(snapshot)
        self.rng = random.Random(f"kube-default:{policy.random_seed}:{snapshot.generation}")
        self.to_find = feasible_nodes_to_find(len(snapshot.nodes))
        self.next_start = 0

    def feasible(self, pod: Pod) -> list[NodeRoom]:
        """Feasible nodes, searched from ``next_start`` round the node list until enough are found."""
        eligible = self.state.eligible(pod)
        total = len(self.state.rooms)
        if not eligible or total == 0:
            return []
        need = self.state.demand(pod)
        # Visit the eligible nodes in the order a scan starting at next_start would meet them.
        start = self.next_start
        split = bisect.bisect_left(eligible, start, key=lambda room: room.index)
        ordered = eligible[split:] + eligible[:split]
        found: list[NodeRoom] = []
        last = start - 1
        for room in ordered:
            last = room.index
            if room.fits(pod, need):
                found.append(room)
                if len(found) >= self.to_find:
                    break
        processed = (last - start) % total + 1 if found and len(found) >= self.to_find else total
        self.next_start = (start + processed) % total
        return found

    def select(self, pod: Pod, nodes: list[NodeRoom]) -> NodeRoom:
        if len(nodes) == 1:
            return nodes[0]
        taints = scoring.taint_toleration([scoring.intolerable_prefer_no_schedule(room.node, pod) for room in nodes])
        if pod.preferred_affinity:
            affinity = scoring.node_affinity([scoring.preferred_affinity(room.node, pod) for room in nodes])
        else:
            affinity = [0] * len(nodes)
        best: list[NodeRoom] = []
        best_score = -1
        for room, taint, preferred in zip(nodes, taints, affinity, strict=True):
            score = (
                scoring.least_allocated(room, pod)
                + scoring.balanced_allocation(room, pod)
                + TAINT_TOLERATION_WEIGHT * taint
                + NODE_AFFINITY_WEIGHT * preferred
            )
            if score > best_score:
                best, best_score = [room], score
            elif score == best_score:
                best.append(room)
        return best[0] if len(best) == 1 else self.rng.choice(best)


def solve(snapshot: Snapshot, policy: Policy | None = None) -> Decision:
    """One pass of the scheduling queue over every pending pod (see the module docstring)."""
    policy = policy or Policy()
    started = time.monotonic()
    scheduler = _Scheduler(snapshot, policy)
    state = scheduler.state
    reasons: dict[str, Reason] = {}
    pods: list[tuple[str, str, Pod]] = []
    for job in pending_jobs(snapshot, gang=False):
        if job.invalid:
            reasons[job.key] = ("Unschedulable", f"PodGroup {job.key} is not in the snapshot")
            continue
        pods.extend((job.key, job.queue, pod) for pod in job.pods)
    pods.sort(key=lambda item: task_order(item[2]))
    for key, queue, pod in pods:
        if not state.queues.allows(queue, pod):
            reasons.setdefault(key, ("QueueOverused", f"queue {queue} is closed or has no room"))
            continue
        if not state.eligible(pod):
            reasons.setdefault(key, ("Unschedulable", f"no node passes the predicates for {pod.key}"))
            continue
        nodes = scheduler.feasible(pod)
        if not nodes:
            continue
        room = scheduler.select(pod, nodes)
        state.take(pod, room, lowest_free_gpus(room, pod))
    return decision(snapshot, state.placements, reasons, scheduler=NAME, started=started)
