"""The snapshot's indexes of its pods (``pods_of_group``, ``pods_on_node``, ``pod_by_key``), carried
from the last cycle's snapshot for the pods the change set leaves out.

Why: each index is a walk over every pod of the snapshot (:class:`vcsat.model.Snapshot`'s cached
properties), made afresh for each live cycle's snapshot though only a few hundred pods changed; the
walk reads one attribute of every pod object, so it costs memory reads more than instructions. A
pod the change set (:func:`vcsat.solver.changes.between`) leaves out is the very pod of the last
snapshot, so it sits under the same key; only the keys of the pods gone or new (a group's, a node's,
a pod's own) are made again, from the last entry's pods that stayed and the new pods.

Readers iterate these indexes (the check walks ``pods_on_node``), so a carried index is the fresh one
exactly, in its order too: keys in the order of their first pod, each key's pods in the snapshot's
order. For the keys' order each index keeps a column, each pod's key in the order of the pods, made
for the next snapshot from slices of the last one and the new pods' keys, never by a step per pod;
the keys are then the column's first showings (``dict.fromkeys``, at C speed). Both need the pods
the two snapshots share to be in one order in each (the converter sorts pods by key): this is
checked, by identity at C speed, and when it fails, or a pod object or pod key shows twice, or the
last snapshot's index was never read, nothing is carried and the snapshot makes the index itself
when first read. Only the live scheduler carries (:func:`vcsat.solver.pod_sums.carrying`); a
one-shot ``vcsat solve`` or a replay never asks.

The carried index is put where the snapshot's cached property keeps its own (the instance's
``__dict__``), before anything reads it, so every reader anywhere gets it; the snapshot stays
immutable to them.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TypeVar, cast

from vcsat.model import Pod, Snapshot
from vcsat.solver import changes, pod_sums

_T = TypeVar("_T")

_Column = list[str | None]
"""Each pod's key in one index (None: the pod is in no entry), in the snapshot's order of pods."""

_last: tuple[Snapshot, dict[int, int], dict[str, _Column]] | None = None
"""The last carried snapshot, the position of each of its pods by id, and its columns by index
name (never changed once kept)."""
_lock = threading.Lock()
"""A cycle and a reader in another thread (the dashboard) may carry at once."""


def _group_of(pod: Pod) -> str | None:
    return pod.group


def _node_of(pod: Pod) -> str | None:
    return pod.node_name if pod.bound else None


def _key_of(pod: Pod) -> str | None:
    return pod.key


_KEYS: dict[str, Callable[[Pod], str | None]] = {
    "pods_of_group": _group_of,
    "pods_on_node": _node_of,
    "pod_by_key": _key_of,
}
"""Each index by the name of its cached property, and the key it files a pod under."""


def carry(snapshot: Snapshot) -> None:
    """Put ``snapshot``'s pod indexes in place, carried from the last snapshot carried, when the live
    scheduler carries; otherwise, or when they cannot be carried, leave them to the snapshot."""
    global _last
    if not pod_sums.carrying():
        return
    pods = snapshot.pods
    with _lock:
        last = _last
        if last is not None and last[0] is snapshot:
            return
        at = dict(zip(map(id, pods), range(len(pods)), strict=True))
        if len(at) != len(pods):  # one pod object twice: positions by id would not say where
            _last = None
            return
        if last is None:
            _last = (snapshot, at, _fresh_columns(pods))
            return
        before, before_at, before_columns = last
        found = changes.between(before, snapshot)
        moves = _Moves.of(found, before_at, at)
        if not moves.order_kept(before.pods, pods):
            _last = (snapshot, at, _fresh_columns(pods))
            return
        columns = {
            name: moves.merged(before_columns[name], [key_of(pod) for pod in found.pods_new])
            for name, key_of in _KEYS.items()
        }
        _last = (snapshot, at, columns)
        cache, kept = snapshot.__dict__, before.__dict__
        for name in ("pods_of_group", "pods_on_node"):
            previous = kept.get(name)
            if previous is not None and name not in cache:
                grouped = _carried(previous, columns[name], found, at, _KEYS[name])
                if grouped is not None:
                    cache[name] = grouped
        if "pod_by_key" in kept and "pod_by_key" not in cache:
            by_key = dict(zip(columns["pod_by_key"], pods, strict=True))
            if len(by_key) == len(pods):  # else two pods of one key: the snapshot makes it
                cache["pod_by_key"] = cast(dict[str, Pod], by_key)


def _fresh_columns(pods: Sequence[Pod]) -> dict[str, _Column]:
    """The columns of a snapshot with nothing to carry from (a walk over its pods), for the next one."""
    return {name: list(map(key_of, pods)) for name, key_of in _KEYS.items()}


def forget() -> None:
    """Drop the last snapshot kept (tests; a process that stops scheduling)."""
    global _last
    with _lock:
        _last = None


@dataclass(frozen=True)
class _Moves:
    """Where the pods gone were in the old snapshot and the new ones are in the new one."""

    gone: list[int]
    """Old positions of the pods gone, sorted."""
    new: list[int]
    """New positions of the new pods, sorted (the change set lists them in the new order)."""

    @classmethod
    def of(cls, found: changes.Changes, before_at: dict[int, int], at: dict[int, int]) -> _Moves:
        return cls(sorted(before_at[id(pod)] for pod in found.pods_gone), [at[id(pod)] for pod in found.pods_new])

    def order_kept(self, before: Sequence[Pod], after: Sequence[Pod]) -> bool:
        """Whether the pods in both snapshots are in the same order in each: ``before`` without its
        gone pods is, object for object, ``after`` without its new ones."""
        if len(before) - len(self.gone) != len(after) - len(self.new):
            return False
        return all(map(operator.is_, _without(before, self.gone), _without(after, self.new)))

    def merged(self, column: Sequence[_T], new: Sequence[_T]) -> list[_T]:
        """``column`` (one item per old pod) for the new snapshot: without the gone pods' items,
        with the new pods' items (``new``, in their order) at their places; as slices."""
        kept = list(_without(column, self.gone))
        pieces: list[Sequence[_T]] = []
        start = 0
        for i, (position, item) in enumerate(zip(self.new, new, strict=True)):
            end = position - i  # the kept pods before the i-th new one
            pieces.append(kept[start:end])
            pieces.append((item,))
            start = end
        pieces.append(kept[start:])
        return list(chain.from_iterable(pieces))


def _without(items: Sequence[_T], cuts: list[int]) -> chain[_T]:
    """``items`` without the ones at the (sorted) positions ``cuts``, as slices (no step per item here)."""
    starts = [0, *(cut + 1 for cut in cuts)]
    ends = [*cuts, len(items)]
    return chain.from_iterable(items[start:end] for start, end in zip(starts, ends, strict=True))


def _carried(
    previous: dict[str, tuple[Pod, ...]],
    column: _Column,
    found: changes.Changes,
    at: dict[int, int],
    key_of: Callable[[Pod], str | None],
) -> dict[str, tuple[Pod, ...]] | None:
    """``previous`` (the last snapshot's index, as a fresh pass made it) for the new snapshot: keys in
    the order of their first pod (the new column's first showing of each), the others' entries
    kept, the keys of the pods gone or new made again from their pods that stayed and the new ones,
    in the new snapshot's order. None when something does not add up (then make it afresh)."""
    touched: dict[str, list[Pod]] = {}
    for pod in found.pods_gone:
        key = key_of(pod)
        if key is not None:
            touched.setdefault(key, [])
    for pod in found.pods_new:
        key = key_of(pod)
        if key is not None:
            touched.setdefault(key, []).append(pod)
    out = cast(dict[str | None, tuple[Pod, ...] | None], dict.fromkeys(column))
    out.pop(None, None)
    # The kept keys' entries (their pods stayed, in order); a key whose pods are all gone is added
    # at the end here and dropped below with the other touched keys.
    out.update(previous)
    for key, new in touched.items():
        # The old pods still there (an id in ``at`` is a live pod of both snapshots, so the same
        # pod) and the new ones, in the new snapshot's order.
        pods = sorted([*(pod for pod in previous.get(key, ()) if id(pod) in at), *new], key=lambda pod: at[id(pod)])
        if pods:
            out[key] = tuple(pods)
        else:
            out.pop(key, None)
    if None in out.values():  # a key of the column with no entry: the column is wrong
        return None
    return cast(dict[str, tuple[Pod, ...]], out)
