"""Sums over a snapshot's pods, kept from one cycle to the next and updated from the pods that changed.

The pricing measures (:mod:`vcsat.solver.pricing.scarcity`, :mod:`vcsat.solver.pricing.fragmentation`)
read statistics of the whole workload every cycle: per kind of pod, how much it asks. In the live
scheduler most pods are the same from one cycle to the next, and the converter
(:mod:`vcsat.adapters.convert.reuse`) hands back the very model objects of unchanged Kubernetes
objects; model objects are immutable, so a pod's contribution to the sums is known by its identity.
A :class:`Tally` keeps the last call's pods and sums, and subtracts what the pods gone added and
adds what the new pods add: integer sums, so the result equals a fresh count exactly (a kind whose
sum falls to zero is dropped, as a fresh count never holds it). It holds the pods it counted, so
their identities cannot be reused while it lives; it keeps the last call only. Asked for a
snapshot's pods (:meth:`Tally.of_snapshot`) after the last call's snapshot, it reads which pods are
gone and new off the change set of the two (:mod:`vcsat.solver.changes`, found once per cycle for
every carry) instead of indexing every pod again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

from vcsat.model import Pod, Snapshot
from vcsat.solver import changes

K = TypeVar("K", bound=Hashable)


class Tally(Generic[K]):
    """Per kind, the sum of what each pod of the last call adds (see the module docstring)."""

    def __init__(self, contribution: Callable[[Pod], Sequence[tuple[K, int]]]) -> None:
        """``contribution``: what one pod adds, (kind, amount) pairs; the same pod always adds the same."""
        self._contribution = contribution
        self._pods: Sequence[Pod] = ()
        self._by_id: dict[int, Pod] = {}
        self._sums: dict[K, int] = {}
        self._snapshot: Snapshot | None = None
        """The snapshot whose pods are ``_pods`` (:meth:`of_snapshot`), else None."""
        self._lock = threading.Lock()
        """One caller at a time (the live scheduler's cycle and its web dashboard both read the workload)."""

    def sums(self, pods: Sequence[Pod]) -> dict[K, int]:
        """Per kind, the sum over ``pods`` (a new dict: the caller may keep or change it)."""
        with self._lock:
            return self._sums_of(pods)

    def of_snapshot(self, snapshot: Snapshot) -> dict[K, int]:
        """:meth:`sums` of ``snapshot.pods``."""
        with self._lock:
            pods = snapshot.pods
            last = self._snapshot
            if pods is not self._pods and last is not None and last.pods is self._pods and self._by_id:
                found = changes.between(last, snapshot)
                if len(found.pod_ids) == len(pods):  # else one pod object twice: counted afresh below
                    for pod in found.pods_gone:
                        self._add(pod, -1)
                    for pod in found.pods_new:
                        self._add(pod, 1)
                    self._pods, self._by_id, self._snapshot = pods, found.pod_ids, snapshot
                    return dict(self._sums)
            out = self._sums_of(pods)
            self._snapshot = snapshot if self._pods is pods else None
            return out

    def _sums_of(self, pods: Sequence[Pod]) -> dict[K, int]:
        if pods is not self._pods:
            self._snapshot = None
            by_id = {id(pod): pod for pod in pods}
            if len(by_id) != len(pods):  # one pod object twice: count afresh, and keep nothing
                self._pods, self._by_id, self._sums = (), {}, {}
                for pod in pods:
                    self._add(pod, 1)
                fresh, self._sums = self._sums, {}
                return fresh
            # The kept pods are alive (held here), so no new pod has the id of one of them: an id
            # in both is the same pod.
            old = self._by_id
            if not old:  # the first call: every pod adds, in one pass
                self._count(pods)
                self._pods, self._by_id = pods, by_id
                return dict(self._sums)
            for key in old.keys() - by_id.keys():
                self._add(old[key], -1)
            for key in by_id.keys() - old.keys():
                self._add(by_id[key], 1)
            self._pods, self._by_id = pods, by_id
        return dict(self._sums)

    def _count(self, pods: Sequence[Pod]) -> None:
        sums = self._sums
        contribution = self._contribution
        # Pods of one spec may share one contribution object: each distinct object is counted
        # once, its amounts times its pods (exact integer sums, the kinds entered in the order of
        # their first pod, as pod by pod; the entries hold the objects, so no id is reused).
        seen: dict[int, list[Any]] = {}
        for pod in pods:
            added = contribution(pod)
            entry = seen.get(id(added))
            if entry is None:
                seen[id(added)] = [added, 1]
            else:
                entry[1] += 1
        for added, times in seen.values():
            for kind, amount in added:
                sums[kind] = sums.get(kind, 0) + amount * times
        for kind in [kind for kind, total in sums.items() if not total]:
            del sums[kind]

    def _add(self, pod: Pod, sign: int) -> None:
        sums = self._sums
        for kind, amount in self._contribution(pod):
            total = sums.get(kind, 0) + sign * amount
            if total:
                sums[kind] = total
            else:
                sums.pop(kind, None)
