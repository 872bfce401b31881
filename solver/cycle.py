"""One cycle's per-pod derived values, made once per snapshot and shared by the build and admission.

A pending pod's eligibility key (:func:`vcsat.solver.rules.predicates.eligibility_key`) is asked for
by the build (its class) and again by admission (its static fit and its place in the free room);
each asking on its own made it again. The context of a snapshot (:func:`of`) keeps each pod's key
from the first asking, so the others look it up.

Why it cannot be stale: a pod is an immutable model object, and a pod a watch event changed is a
new object, so an entry found by a pod's identity (and holding that pod) is that very pod's key.
Why it holds nothing old: the context is kept for the last snapshot only; the next snapshot gets a
new one, and the pods of the last are let go with it.
"""

from __future__ import annotations

import threading

from vcsat.model import Pod, Snapshot
from vcsat.solver.rules import predicates


class PodKeys:
    """Each pod's eligibility key, made once while this object lives (a pod is asked about many times)."""

    def __init__(self) -> None:
        self._by_pod: dict[int, tuple[Pod, predicates.EligibilityKey]] = {}

    def of(self, pod: Pod) -> predicates.EligibilityKey:
        found = self._by_pod.get(id(pod))
        if found is not None and found[0] is pod:
            return found[1]
        key = predicates.eligibility_key(pod)
        # The entry holds the pod, so its id cannot be reused while the entry lives.
        self._by_pod[id(pod)] = (pod, key)
        return key


class Cycle:
    """What the build and admission of one snapshot share about its pods (see the module docstring)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.keys = PodKeys()


_last: Cycle | None = None
_lock = threading.Lock()


def of(snapshot: Snapshot) -> Cycle:
    """The context of ``snapshot``: the last one made if it is for this very snapshot, else a new one."""
    global _last
    with _lock:
        last = _last
        if last is not None and last.snapshot is snapshot:
            return last
        _last = made = Cycle(snapshot)
        return made
