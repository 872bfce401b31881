"""What a run of distributed Jobs looked like, read from the pod watch: who held GPUs while waiting.

A distributed training Job (TensorFlow's ps/worker, MPI's master/worker) computes only once every
one of its pods runs: each step waits for all peers. A pod that was placed while a peer of its Job
still waits for room holds its GPUs and does nothing. This module measures that from the recorded
pod changes (tests/e2e/e2e_support.PodWatch), per Job:

- **partial GPU-seconds**: GPUs held by the Job's bound, unfinished pods, integrated over the time
  during which not all of its pods had been bound yet;
- **stalled**: the Job held GPUs while partial when a GPU pod of another Job finished, having been
  bound before that Job's first pod finished (so its placement was not an answer to the room
  those pods free, made while they were still finishing), or when the observation ended: it was
  waiting for room, not for the moments between the bindings of one decision.

Plain module beside conftest.py, pure functions of the recorded changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from e2e_support import PodChange

FINISHED = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class JobTimeline:
    """One Job's run as the watch saw it."""

    job: str
    size: int
    bound: int
    """Pods of the Job ever bound."""
    partial_gpu_seconds: float
    max_partial_gpus: int
    """The most GPUs the Job held at one moment while partial."""
    stalled: bool


@dataclass
class _Pod:
    job: str
    gpus: int
    bound: bool = False
    done: bool = False

    @property
    def holding(self) -> int:
        return self.gpus if self.bound and not self.done else 0


def timelines(changes: list[PodChange], sizes: dict[str, int], end: float) -> dict[str, JobTimeline]:
    """Each Job of ``sizes`` (name -> pods it needs at once) from ``changes``, observed until ``end``."""
    pods: dict[str, _Pod] = {}
    gpu_seconds = dict.fromkeys(sizes, 0.0)
    peak = dict.fromkeys(sizes, 0)
    stalled = dict.fromkeys(sizes, False)
    first_bound: dict[str, int] = {}
    first_finish: dict[str, int] = {}
    last = changes[0].at if changes else end

    def bound_count(job: str) -> int:
        return sum(1 for p in pods.values() if p.job == job and p.bound)

    def partial_holding(job: str) -> int:
        if bound_count(job) >= sizes[job]:
            return 0
        return sum(p.holding for p in pods.values() if p.job == job)

    for index, change in enumerate([*changes, None]):
        now = end if change is None else min(change.at, end)
        for job in sizes:
            held = partial_holding(job)
            gpu_seconds[job] += held * max(0.0, now - last)
            peak[job] = max(peak[job], held)
        last = now
        if change is None:
            for job in sizes:
                stalled[job] = stalled[job] or partial_holding(job) > 0
            break
        if change.job not in sizes:
            continue
        pod = pods.setdefault(change.uid, _Pod(change.job, change.gpus))
        freed = pod.holding > 0 and (change.phase in FINISHED or change.kind == "DELETED")
        pod.bound = pod.bound or bool(change.node)
        pod.done = pod.done or change.phase in FINISHED or change.kind == "DELETED"
        if pod.bound:
            first_bound.setdefault(change.job, index)
        if freed:
            first_finish.setdefault(change.job, index)
            for job in sizes:
                if job != change.job and partial_holding(job) > 0 and first_bound[job] < first_finish[change.job]:
                    stalled[job] = True
    return {
        job: JobTimeline(job, size, bound_count(job), gpu_seconds[job], peak[job], stalled[job])
        for job, size in sizes.items()
    }


def node_overcommits(changes: list[PodChange], capacity: dict[str, int]) -> list[str]:
    """Moments when the pods bound to a node and not yet finished or gone asked more GPUs than it has.

    A pod being deleted still holds its room until it is gone, as the kubelet keeps it running
    until then; an empty list is what a scheduler that waits for its victims must produce.
    """
    held: dict[str, tuple[str, int]] = {}
    found: list[str] = []
    for change in changes:
        if change.kind == "DELETED" or change.phase in FINISHED or not change.node:
            held.pop(change.uid, None)
        else:
            held[change.uid] = (change.node, change.gpus)
        if change.node in capacity:
            total = sum(g for node, g in held.values() if node == change.node)
            if total > capacity[change.node]:
                found.append(f"{change.node}: {total} GPUs held of {capacity[change.node]} after {change.name}")
    return found
