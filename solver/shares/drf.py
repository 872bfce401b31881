"""Dominant Resource Fairness among jobs: dominant shares, and the reference progressive filling.

Why: inside a queue, jobs of equal priority share by DRF (Volcano's drf plugin; Ghodsi et al.,
"Dominant Resource Fairness", NSDI 2011). The CP-SAT model states DRF as max-min of dominant
shares; this module gives the exact shares those terms are built from, and a plain greedy DRF
allocator that tests compare the model with. The paper's example (one node of 9 CPU and 18 GiB;
A's tasks ⟨1 CPU, 4 GiB⟩, B's ⟨3 CPU, 1 GiB⟩) gives A 3 tasks and B 2.

A job's dominant share is the largest, over resources, of what it holds divided by the total:
Volcano's ``calculateShare``, with its convention that a resource the cluster has none of counts
as a share of 1 when asked for. Unlike Volcano, the ``pods`` count and GPU shares
(:data:`~vcsat.solver.shares.deserved.FAIR_EXCLUDED`) are not resources a job dominates on: a
pods limit of 110 would make every tiny pod look like a 1/110 share of the cluster.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from fractions import Fraction
from typing import TypeVar

from vcsat.model import Pod, Snapshot
from vcsat.model import resources as res
from vcsat.solver.shares.deserved import FAIR_EXCLUDED, cluster_total

Job = TypeVar("Job", bound=Hashable)


def dominant_share(request: res.Resources, total: res.Resources) -> Fraction:
    """The largest ``request[r] / total[r]`` over resources (``pods`` and GPU shares left out); a
    positive request of a resource the total lacks counts as 1, as in Volcano."""
    share = Fraction(0)
    for name, amount in request.items():
        if amount <= 0 or name in FAIR_EXCLUDED:
            continue
        capacity = total.get(name, 0)
        part = Fraction(1) if capacity <= 0 else Fraction(amount, capacity)
        share = max(share, part)
    return share


def drf_progressive_filling(
    capacity: res.Resources,
    demands_per_job: Mapping[Job, res.Resources],
    max_tasks: Mapping[Job, int] | None = None,
) -> dict[Job, int]:
    """How many tasks each job gets under DRF progressive filling, as the paper's Algorithm 1.

    Repeatedly the job with the lowest dominant share (ties: the earlier job in
    ``demands_per_job``) launches one more task, if its per-task demand fits in what is left of
    ``capacity``; a job whose next task does not fit, or that reached ``max_tasks[job]``, takes no
    more. Unlike Algorithm 1, which stops at the first job that does not fit, the others go on:
    the result is Pareto-efficient (no job's next task fits at the end). Shares are measured
    against ``capacity``. A job absent from ``max_tasks`` is bounded only by the capacity; a job
    asking nothing must have a bound.
    """
    limits = dict(max_tasks or {})
    order = list(demands_per_job)
    for job in order:
        asks = any(amount > 0 for name, amount in demands_per_job[job].items())
        if not asks and job not in limits:
            raise ValueError(f"job {job!r} asks for nothing and has no max_tasks: it would never stop")
    left = dict(capacity)
    counts: dict[Job, int] = {job: 0 for job in order}
    held: dict[Job, dict[str, int]] = {job: {} for job in order}
    rank = {job: index for index, job in enumerate(order)}
    active = [job for job in order if limits.get(job, 1) > 0]
    while active:
        job = min(active, key=lambda j: (dominant_share(held[j], capacity), rank[j]))
        demand = demands_per_job[job]
        if not res.fits(demand, left):
            active.remove(job)  # capacity only shrinks: it will never fit later either
            continue
        left = res.sub(left, demand)
        held[job] = res.add(held[job], demand)
        counts[job] += 1
        if job in limits and counts[job] >= limits[job]:
            active.remove(job)
    return counts


def job_of(pod: Pod) -> str:
    """The job a pod belongs to for DRF: its PodGroup, or the pod itself when it has none."""
    return pod.group if pod.group is not None else pod.key


def job_usage(snapshot: Snapshot) -> dict[str, dict[str, int]]:
    """What each job (PodGroup key, or pod key for a lone pod) of ours holds now."""
    out: dict[str, dict[str, int]] = {}
    for pod in snapshot.pods:
        if pod.managed and pod.bound:
            key = job_of(pod)
            out[key] = res.add(out.get(key, {}), pod.requests)
    return out


def job_dominant_shares(snapshot: Snapshot, total: res.Resources | None = None) -> dict[str, Fraction]:
    """Each job's dominant share of ``total`` (the :func:`cluster_total` when None) for what it
    holds now; jobs holding nothing are absent (their share is 0)."""
    room = cluster_total(snapshot) if total is None else total
    return {key: dominant_share(usage, room) for key, usage in sorted(job_usage(snapshot).items())}
