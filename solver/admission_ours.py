"""Which PodGroups are ours to admit, kept from the last pass for the groups the change set leaves out.

Why: admission (:mod:`vcsat.solver.enqueue`) starts every pass by finding the groups that are ours
(``ours_of``: a pass over every pod and one over every group), though in a live steady cycle only a
few hundred groups change. Whether a group is ours (``is_ours``) reads only its PodGroup object and
its pods, so a group the change set between the last pass's snapshot and this one
(:attr:`vcsat.solver.changes.Changes.groups_touched`) leaves out is the very group with the very
pods, and its answer stands; a touched group is asked again with the same function. The set is
therefore the one a fresh pass finds. Only the live scheduler carries (:func:`pod_sums.carrying`,
as the commitments); a one-shot ``vcsat solve`` or a replay finds the set afresh, and so does a
snapshot with two PodGroups of one key (a key's answer would depend on both).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from vcsat.model import PodGroup, Snapshot
from vcsat.solver import changes, pod_sums

_last: tuple[Snapshot, str, set[str]] | None = None
"""The last carried pass's snapshot, scheduler name and set (never changed once kept)."""
_lock = threading.Lock()
"""A cycle and a reader of admission in another thread may ask at once."""


def ours(
    snapshot: Snapshot,
    scheduler_name: str,
    fresh: Callable[[Snapshot, str], set[str]],
    one: Callable[[PodGroup, Snapshot, str], bool],
) -> set[str]:
    """``fresh(snapshot, scheduler_name)``, carried from the last pass when the live scheduler carries:
    the keys of the touched groups asked again with ``one(group, snapshot, scheduler_name)``. The
    set is shared with the next pass: read it, never change it."""
    global _last
    if not pod_sums.carrying() or len(snapshot.podgroup_by_key) != len(snapshot.podgroups):
        return fresh(snapshot, scheduler_name)
    with _lock:
        last = _last
        if last is None or last[1] != scheduler_name:
            found = fresh(snapshot, scheduler_name)
        elif last[0] is snapshot:
            return last[2]
        else:
            # A copy: the last pass's set may still be read by whoever holds that pass.
            found = set(last[2])
            by_key = snapshot.podgroup_by_key
            for key in changes.between(last[0], snapshot).groups_touched:
                group = by_key.get(key)
                if group is not None and one(group, snapshot, scheduler_name):
                    found.add(key)
                else:
                    found.discard(key)
        _last = (snapshot, scheduler_name, found)
        return found


def forget() -> None:
    """Drop the last pass's set (tests; a process that stops scheduling)."""
    global _last
    with _lock:
        _last = None
