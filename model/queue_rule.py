"""The queue a pod counts against: the one definition of the rule, for the model's
:meth:`vcsat.model.Snapshot.queue_of` and for the solver's loops over every pod.

The model's classes stay Python in every build (pydantic), so a compiled loop that asked the
snapshot's method once per pod would make a Python call per pod, and the method reads the
snapshot's PodGroups by key again each time. This module is compiled with those loops: they read
``snapshot.podgroup_by_key`` once and call :func:`queue_in` directly, and the method calls it too,
so the rule is written once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # the model imports this module; the classes are only annotations here
    from vcsat.model.cluster import Pod, PodGroup

DEFAULT_QUEUE: Final = "default"
"""Volcano's queue for pods of ours that name none."""


def queue_in(pod: Pod, groups: dict[str, PodGroup]) -> str | None:
    """The queue ``pod``'s room counts against, given ``groups``, the snapshot's ``podgroup_by_key``:
    its PodGroup's queue; for a pod of ours without a PodGroup its
    ``scheduling.volcano.sh/queue-name`` annotation, else ``default``; None for pods of other
    schedulers, which belong to no queue, and for pods whose PodGroup is not in the snapshot."""
    if not pod.managed:
        return None
    key = pod.group
    if key is not None:
        group = groups.get(key)
        return group.queue if group is not None else None
    return pod.queue_name or DEFAULT_QUEUE
