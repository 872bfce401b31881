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
every carry) instead of indexing every pod again. Pods are counted per contribution object, gone
and new alike (pods of one spec share one), and when most pods are gone or new
(:attr:`~vcsat.solver.changes.Changes.pods_mostly_kept` false: files read one after another in one
process share no object) the new snapshot's pods are counted afresh, which costs half as much as
taking every old pod out and putting every new one in.
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
                    if found.pods_mostly_kept:
                        self._count(found.pods_gone, -1)
                        self._count(found.pods_new)
                    else:  # mostly new pods: one pass over them costs less than taking out and putting in
                        self._sums = {}
                        self._count(pods)
                    self._pods, self._by_id, self._snapshot = pods, found.pod_ids, snapshot
                    return dict(self._sums)
            out = self._sums_of(pods)
            self._snapshot = snapshot if self._pods is pods else None
            return out

    def _sums_of(self, pods: Sequence[Pod]) -> dict[K, int]:
        if pods is not self._pods:
            self._snapshot = None
            by_id = dict(zip(map(id, pods), pods, strict=True))
            if len(by_id) != len(pods):  # one pod object twice: count afresh, and keep nothing
                self._pods, self._by_id, self._sums = (), {}, {}
                self._count(pods)
                fresh, self._sums = self._sums, {}
                return fresh
            # The kept pods are alive (held here), so no new pod has the id of one of them: an id
            # in both is the same pod.
            old = self._by_id
            # The first call has nothing to take out: no set differences over every pod then.
            gone = [old[key] for key in old.keys() - by_id.keys()] if old else []
            new = [by_id[key] for key in by_id.keys() - old.keys()] if old else []
            if old and changes.mostly_kept(len(gone), len(new), len(old), len(by_id)):
                self._count(gone, -1)
                self._count(new)
            else:  # the first call, or mostly new pods: every pod adds, in one pass
                self._sums = {}
                self._count(pods)
            self._pods, self._by_id = pods, by_id
        return dict(self._sums)

    def _count(self, pods: Sequence[Pod], sign: int = 1) -> None:
        """Add (``sign`` -1: take out) what ``pods`` add; a kind whose sum falls to zero is dropped."""
        sums = self._sums
        contribution = self._contribution
        # Pods of one spec may share one contribution object: each distinct object is counted
        # once, its amounts times its pods (exact integer sums, the kinds entered in the order of
        # their first pod, as pod by pod; the entries hold the objects, so no id is reused). Which
        # order a kind is entered in reads nowhere: readers sort or sum (a carried tally already
        # holds its kinds in another order than a fresh count).
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
                sums[kind] = sums.get(kind, 0) + sign * amount * times
        for kind in [kind for kind, total in sums.items() if not total]:
            del sums[kind]
