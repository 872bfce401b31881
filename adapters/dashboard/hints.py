"""What would let a waiting PodGroup run, per reason code of the solver (README's list).

The solver's message says what stands in the way, with amounts; this adds the other half of the
question a user asks on the job's page: what would change the answer. Each hint is a sentence per
reason code, followed by the amounts the page knows (the gang's need beside the cluster's free room
and its queue's share), so the user sees how far off it is. An unknown code gets a general line.
"""

from __future__ import annotations

from vcsat.adapters.dashboard.views import JobView
from vcsat.adapters.live.queue_view import QueueRow
from vcsat.model import resources as res

WHAT_HELPS: dict[str, str] = {
    "Unschedulable": "A change to the cluster or the job, since as things are it can never run: the "
    "message names what is missing (a node that matches its pods' node selector, affinity and "
    "tolerations, is Ready and not cordoned and is large enough for one pod; or a queue capability "
    "that covers its minimum); or pods that ask less.",
    "SchedulingGated": "Whoever set the pods' scheduling gates removing them (spec.schedulingGates).",
    "QueueNotFound": "Creating the queue its PodGroup names, or pointing the PodGroup at an existing queue.",
    "PodGroupNotFound": "Creating the PodGroup its pods name (scheduling.k8s.io/group-name).",
    "InsufficientResources": "Free room for its minimum: work finishing, more nodes, or a smaller minMember.",
    "GangUnsatisfied": "As many pods as minMember (and each task's minTaskMember) asks; its controller may "
    "still be creating them.",
    "QueueClosed": "Opening its queue (vcsat queue open, or status.state Open).",
    "QueueOverused": "Room in its queue: its (or an ancestor's) capability raised, its running jobs "
    "finishing, or other queues' demand falling so that its deserved share grows.",
    "ClusterOverused": "Idle room for admission: running work finishing or more nodes.",
    "InqueueTimeout": "It is admitted again by the usual rules once room frees; nothing to do but wait.",
    "WaitingForEviction": "Nothing: its victims are being evicted; it is bound once they are gone.",
    "NetworkTopologyUnsatisfied": "Room within one HyperNode of the allowed tier, or a softer "
    "networkTopology (mode soft, or a higher highestTierAllowed).",
    "Fragmented": "Room on fewer nodes: enough is free in total but scattered; work finishing on the "
    "nodes its pods fit, or pods that ask less each.",
    "Outranked": "Less work ranked above it (higher queue priority, higher job priority, or more "
    "placed work): it runs when that work is served or finishes, or with a higher priority.",
}
GENERAL = "The message above names what blocks it; when that changes, the next cycle places it."


def what_would_help(job: JobView, queue: QueueRow | None) -> list[str]:
    """The hint for the job's reason, then the amounts that bear on it."""
    reason = job.outcome.reason if job.outcome is not None else ""
    if job.outcome is not None and job.outcome.phase == "Running":
        return ["Nothing: the last cycle placed it."]
    lines = [WHAT_HELPS.get(reason, GENERAL)]
    if job.need:
        lines.append(f"Its waiting pods ask {res.format_vector(job.need)} in all.")
        lines.append(f"Free in the cluster after the last cycle: {res.format_vector(job.cluster_free) or 'nothing'}.")
        lines.append(f"The most free on one node: {res.format_vector(job.largest_free) or 'nothing'}.")
    if queue is not None and queue.capability:
        over = {name: amount for name, amount in job.need.items() if amount > queue.capability.get(name, amount)}
        if over:
            lines.append(
                f"Its queue's capability ({res.format_vector({n: queue.capability[n] for n in over})}) is below "
                f"what its waiting pods ask ({res.format_vector(over)}): a higher capability or a smaller gang."
            )
    if queue is not None:
        lines.append(
            f"Queue {queue.name} holds {res.format_vector(queue.allocated) or 'nothing'}"
            f" and deserves {res.format_vector(queue.deserved) or 'nothing'} (share {queue.share:.2f})"
            + (f"; capability {res.format_vector(queue.capability)}" if queue.capability else "")
            + ("; the queue is closed" if not queue.open else "")
            + "."
        )
    return lines
