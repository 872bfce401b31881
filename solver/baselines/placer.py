"""The loop the placement-policy baselines share: jobs in FIFO order, gangs all or nothing.

Best fit, first fit and FGD differ only in where one pod goes (node and GPU indices); everything
else is this loop, so that a comparison between them measures the placement policy alone. Jobs go
in priority-then-age order (no queue fairness); each pending pod of a job gets the node the policy
chooses among the nodes where it passes the predicates and fits; a gang's placements are kept only
when ``minMember`` (and every ``minTaskMember``) is met, otherwise taken back (``policy.gang`` off:
every pod on its own). Queue capability and Closed queues are kept, as contract §3 requires.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from vcsat.model import Decision, Pod, Policy, Snapshot
from vcsat.solver.baselines.jobs import fifo_order, pending_jobs
from vcsat.solver.baselines.outcome import Reason, decision
from vcsat.solver.baselines.state import ClusterState, NodeRoom, Statement

Choice = tuple[NodeRoom, tuple[int, ...]]
"""The node a pod goes to and the GPU indices it takes there."""
Chooser = Callable[[ClusterState, Pod, list[NodeRoom]], Choice]
"""A placement policy: given the pod and the nodes where it fits now (never empty), where it goes."""


def place_jobs(snapshot: Snapshot, policy: Policy, choose: Chooser, *, name: str) -> Decision:
    started = time.monotonic()
    state = ClusterState(snapshot)
    reasons: dict[str, Reason] = {}
    for job in sorted(pending_jobs(snapshot, gang=policy.gang), key=fifo_order):
        if job.invalid == "unknown":
            reasons[job.key] = ("Unschedulable", f"PodGroup {job.key} is not in the snapshot")
            continue
        if job.invalid:
            reasons[job.key] = ("GangUnsatisfied", job.invalid)
            continue
        if not state.queues.is_open(job.queue):
            reasons[job.key] = ("QueueClosed", f"queue {job.queue} is closed or unknown")
            continue
        statement = Statement(state)
        placed: list[Pod] = []
        for pod in job.pods:
            if not state.queues.allows(job.queue, pod):
                reasons.setdefault(job.key, ("QueueOverused", f"queue {job.queue} capability is full"))
                continue
            if not state.eligible(pod):
                reasons[job.key] = ("Unschedulable", f"no node passes the predicates for {pod.key}")
                continue
            rooms = state.feasible(pod)
            if rooms:
                room, gpus = choose(state, pod, rooms)
                statement.allocate(pod, room, gpus)
                placed.append(pod)
        if not policy.gang or job.ready(placed):
            statement.commit()
        else:
            statement.discard()
            reasons.setdefault(job.key, ("InsufficientResources", "the gang did not fit whole"))
    return decision(snapshot, state.placements, reasons, scheduler=name, started=started)
