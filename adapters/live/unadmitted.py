"""The PodGroups a cycle may admit though they have no pods yet, carried from the last cycle's snapshot.

Why: a Job controller creates a job's pods only once its PodGroup is Inqueue, so each applied
decision adds the admission of our Pending groups with no pod bound or pending (the scheduler's
``_with_admissions``). Finding them walked every PodGroup and its pods each cycle, though a cycle
changes a few hundred of thousands. Whether a group is one depends only on the group and its pods,
so the difference of two snapshots (:mod:`vcsat.solver.changes`: the groups whose object or pods
changed) says which to ask again. A snapshot with two groups of one key is asked afresh.
"""

from __future__ import annotations

from vcsat.model import PodGroup, Snapshot


def waits_for_pods(group: PodGroup, snapshot: Snapshot, scheduler_name: str, default: str) -> bool:
    """Ours (by the name its Job gave it, ``default`` when none), Pending, and none of its pods
    bound or pending."""
    return (
        (group.scheduler_name or default) == scheduler_name
        and group.phase in ("", "Pending")
        and not any(pod.bound or pod.pending for pod in snapshot.pods_of_group.get(group.key, ()))
    )


class Unadmitted:
    """The last snapshot's keys of groups :func:`waits_for_pods`; :meth:`of` makes the next one's."""

    def __init__(self) -> None:
        self._last: tuple[Snapshot, str, frozenset[str]] | None = None

    def of(self, snapshot: Snapshot, scheduler_name: str) -> frozenset[str]:
        from vcsat.solver.enqueue import DEFAULT_SCHEDULER  # the solver loads with the first decision

        last = self._last
        if last is not None and last[0] is snapshot and last[1] == scheduler_name:
            return last[2]
        if last is None or last[1] != scheduler_name or not _unique(snapshot) or not _unique(last[0]):
            keys = frozenset(
                group.key
                for group in snapshot.podgroups
                if waits_for_pods(group, snapshot, scheduler_name, DEFAULT_SCHEDULER)
            )
        else:
            from vcsat.solver import changes

            touched = changes.between(last[0], snapshot).groups_touched
            by_key = snapshot.podgroup_by_key
            asked = {
                key
                for key in touched
                if key in by_key and waits_for_pods(by_key[key], snapshot, scheduler_name, DEFAULT_SCHEDULER)
            }
            keys = frozenset(last[2].difference(touched)) | asked
        self._last = (snapshot, scheduler_name, keys)
        return keys


def _unique(snapshot: Snapshot) -> bool:
    return len(snapshot.podgroup_by_key) == len(snapshot.podgroups)
