"""What the metrics read of every PodGroup and pod after each cycle, carried from the last cycle's snapshot.

Why: the Volcano-named gauges (:mod:`vcsat.adapters.live.volcano_metrics`) need, after every cycle,
the label values of each PodGroup's job series (to drop the series of groups gone), each queue's
PodGroups per phase and the pods waiting for room. Walking every PodGroup and pod for them costs a
share of a steady cycle at thousands of groups, on the cores the next cycle shares, though a cycle
changes a few hundred. The difference of two snapshots (:mod:`vcsat.solver.changes`, by the
identity of their model objects) says which to take out and put in; a snapshot with two groups or
pods of one key is counted afresh (the difference by identity could not tell which one a key's
label belongs to, nor count an object listed twice).
"""

from __future__ import annotations

from dataclasses import dataclass

from vcsat.model import Pod, PodGroup, Snapshot

Label = tuple[str, str, str]
"""A job's series labels: name, queue, namespace."""


@dataclass
class Tallies:
    """One snapshot's PodGroup tallies. Read-only for callers: the next snapshot's are made from them."""

    snapshot: Snapshot
    labels: set[Label]
    """Every PodGroup's :func:`label`."""
    phases: dict[tuple[str, str], int]
    """PodGroups per (queue, :func:`phase`); no zero counts."""
    waiting: int
    """Pods pending and not held (:func:`waits`)."""


def label(group: PodGroup) -> Label:
    return (group.name, group.queue, group.namespace)


def waits(pod: Pod) -> bool:
    """Pending for room: what a cycle may try to place."""
    return pod.pending and not pod.held


def phase(group: PodGroup) -> str:
    """The phase the group shows (an empty one is Pending)."""
    return group.phase or "Pending"


class GroupTallies:
    """The last snapshot's tallies; :meth:`of` makes the next one's from them. One caller at a time."""

    def __init__(self) -> None:
        self._last: Tallies | None = None

    def of(self, snapshot: Snapshot) -> Tallies:
        last = self._last
        if last is not None and last.snapshot is snapshot:
            return last
        if last is None or not _unique(snapshot) or not _unique(last.snapshot):
            found = _fresh(snapshot)
        else:
            from vcsat.solver import changes  # the solver loads with the first decision, not at import

            diff = changes.between(last.snapshot, snapshot)
            labels, phases = last.labels, last.phases  # taken over: the last tallies are not read again
            # Out first, then in: a group replaced under the same key keeps its label.
            labels.difference_update(map(label, diff.groups_gone))
            labels.update(map(label, diff.groups_new))
            for group in diff.groups_gone:
                key = (group.queue, phase(group))
                left = phases[key] - 1
                if left:
                    phases[key] = left
                else:
                    del phases[key]
            for group in diff.groups_new:
                key = (group.queue, phase(group))
                phases[key] = phases.get(key, 0) + 1
            waiting = last.waiting - sum(map(waits, diff.pods_gone)) + sum(map(waits, diff.pods_new))
            found = Tallies(snapshot, labels, phases, waiting)
        self._last = found
        return found


def _unique(snapshot: Snapshot) -> bool:
    return len(snapshot.podgroup_by_key) == len(snapshot.podgroups) and len(snapshot.pod_by_key) == len(snapshot.pods)


def _fresh(snapshot: Snapshot) -> Tallies:
    phases: dict[tuple[str, str], int] = {}
    for group in snapshot.podgroups:
        key = (group.queue, phase(group))
        phases[key] = phases.get(key, 0) + 1
    labels = {label(group) for group in snapshot.podgroups}
    return Tallies(snapshot, labels, phases, sum(map(waits, snapshot.pods)))
