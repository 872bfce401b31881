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
        self._by_spec: dict[tuple[int, int, int], tuple[object, object, object, predicates.EligibilityKey]] = {}
        """Keys by the identities of the selector, affinity and tolerations they are made of: pods of
        one spec share those objects (the converter reads each distinct spec once)."""

    def of(self, pod: Pod) -> predicates.EligibilityKey:
        found = self._by_pod.get(id(pod))
        if found is not None and found[0] is pod:
            return found[1]
        selector, affinity, tolerations = pod.node_selector, pod.affinity, pod.tolerations
        spec = (id(selector), id(affinity), id(tolerations))
        same = self._by_spec.get(spec)
        if same is not None and same[0] is selector and same[1] is affinity and same[2] is tolerations:
            key = same[3]
        else:
            key = predicates.eligibility_key(pod)
            self._by_spec[spec] = (selector, affinity, tolerations, key)
        # Each entry holds the objects its ids are of, so no id is reused while the entry lives.
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
