"""How many of a snapshot's pods have a property, carried from the last live snapshot through the
change set.

Why: some questions a cycle asks of the whole cluster are a walk over every pod to learn one count,
and the answer almost never changes. The inter-pod isolation hook
(:func:`vcsat.solver.rules.interpod.interpod_interaction`) asks whether any bound pod has an
inter-pod term: a walk over every pod of the cluster, every live cycle, to find none. Between
two live cycles only the pods the change set (:func:`vcsat.solver.changes.between`) names as
gone or new differ (every other pod is the very model object of the last snapshot, and model
objects are immutable), so the count is the last one less the gone pods that had the property
plus the new ones that have it.

A property (a :data:`Fact`) must be a pure function of the pod. Only the live scheduler carries
(:func:`vcsat.solver.pod_sums.carrying`); a one-shot solve, a replay or a test counts afresh, and
so does a carry whose last snapshot shares less than half of its pods with this one
(:attr:`~vcsat.solver.changes.Changes.pods_mostly_kept`: then a fresh count is cheaper). The count
is a fresh count's either way (integers).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from vcsat.model import Pod, Snapshot
from vcsat.solver import changes, pod_sums

Fact = Callable[[Pod], bool]
"""A property of one pod, read from the pod alone."""

_last: dict[Fact, tuple[Snapshot, int]] = {}
"""Per fact, the last snapshot counted and its count."""
_lock = threading.Lock()
"""A cycle and a reader in another thread (the dashboard) may count at once."""


def bound_with_pod_terms(pod: Pod) -> bool:
    """Bound (holding room on its node) with a required or preferred inter-pod affinity or
    anti-affinity term."""
    return pod.bound and (not pod.pod_affinity.empty or not pod.pod_anti_affinity.empty)


def count(snapshot: Snapshot, fact: Fact) -> int:
    """How many of ``snapshot``'s pods have ``fact``: carried from the last snapshot counted when
    the live scheduler carries and most pods were kept, else counted afresh."""
    if not pod_sums.carrying():
        return sum(map(fact, snapshot.pods))
    with _lock:
        last = _last.get(fact)
        if last is not None and last[0] is snapshot:
            return last[1]
        if last is not None:
            found = changes.between(last[0], snapshot)
            if found.pods_mostly_kept:
                counted = last[1] + sum(map(fact, found.pods_new)) - sum(map(fact, found.pods_gone))
                _last[fact] = (snapshot, counted)
                return counted
        counted = sum(map(fact, snapshot.pods))
        _last[fact] = (snapshot, counted)
        return counted


def forget() -> None:
    """Drop the last counts (tests; a process that stops scheduling)."""
    with _lock:
        _last.clear()
