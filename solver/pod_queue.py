"""The queue a pod counts against, by the model's rule (:meth:`vcsat.model.Snapshot.queue_of`), for
loops over every pod.

The model's classes stay Python in every build (pydantic), so a compiled loop that asks the
snapshot's method once per pod makes a Python call per pod, and the method reads the snapshot's
PodGroups by key again each time. The same rule here is compiled with the loops that use it: the
caller reads ``snapshot.podgroup_by_key`` once and hands it in. ``tests/test_pod_queue.py`` checks
it against the model's method.
"""

from __future__ import annotations

from vcsat.model import Pod, PodGroup
from vcsat.model.cluster import DEFAULT_QUEUE


def queue_in(pod: Pod, groups: dict[str, PodGroup]) -> str | None:
    """``snapshot.queue_of(pod)``, given ``groups``, the snapshot's ``podgroup_by_key``: its PodGroup's
    queue; for a pod of ours without a PodGroup its queue-name annotation, else ``default``; None for
    pods of other schedulers and for pods whose PodGroup is not in the snapshot."""
    if not pod.managed:
        return None
    key = pod.group
    if key is not None:
        group = groups.get(key)
        return group.queue if group is not None else None
    return pod.queue_name or DEFAULT_QUEUE
